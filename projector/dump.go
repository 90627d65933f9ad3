package projector

import (
	"context"
	"io"

	"dshmem/sqlstore"
)

// Dump writes every index table of s in a canonical form (see
// sqlstore.Store.Dump): two indexes that hold the same projection dump
// to the same bytes whatever order their events were folded in, which is
// how the tests compare a live index with a rebuilt one.
func Dump(ctx context.Context, s *sqlstore.Store, w io.Writer) error { return s.Dump(ctx, w) }

// DumpFiles writes the tables of the Markdown writer in Dump's form (see
// sqlstore.Store.DumpFiles).
func DumpFiles(ctx context.Context, s *sqlstore.Store, w io.Writer) error { return s.DumpFiles(ctx, w) }
