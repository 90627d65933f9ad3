package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"time"

	"modernc.org/sqlite"
)

// What a scrub needs of the live index: its whole content replaced by a
// rebuild's, and the pages of the old content gone from its files.

// restorer is the part of modernc's connection that restores a database
// from another file with SQLite's online backup.
type restorer interface {
	NewRestore(srcURI string) (*sqlite.Backup, error)
}

// ReplaceWith replaces the whole content of the index with that of the
// index at path (an index of the same schema, such as a rebuild of the
// same log), in one step: SQLite's online backup API copies every page
// of path into this database in one write transaction, so a reader sees
// the old index or the new one, never a mix. The connection that ran it
// is then discarded, so no cache of the old content survives in the
// pool. Call Vacuum after it to leave no page of the old content in
// index.db or its WAL.
func (s *Store) ReplaceWith(ctx context.Context, path string) error {
	if s.readOnly {
		return errors.New("sqlstore: replace a read-only index")
	}
	src, err := dsn(path, url.Values{"mode": {"ro"}})
	if err != nil {
		return err
	}
	s.entriesChanged()
	defer s.entriesChanged()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("replace index %s: %w", s.path, err)
	}
	defer conn.Close()
	restored := false
	err = conn.Raw(func(dc any) error {
		r, ok := dc.(restorer)
		if !ok {
			return fmt.Errorf("the sqlite driver's connection (%T) cannot restore", dc)
		}
		b, err := r.NewRestore(src)
		if err != nil {
			return fmt.Errorf("start restore: %w", err)
		}
		for {
			more, err := b.Step(-1)
			if err != nil {
				b.Finish()
				return fmt.Errorf("copy pages: %w", err)
			}
			if !more {
				break
			}
		}
		if err := b.Finish(); err != nil {
			return fmt.Errorf("finish restore: %w", err)
		}
		restored = true
		// Drop this connection rather than pool it: what it cached of
		// the old content (FTS5 keeps structure records) must not be
		// used again.
		return driver.ErrBadConn
	})
	if !restored {
		return fmt.Errorf("replace index %s with %s: %w", s.path, path, err)
	}
	return nil
}

// Vacuum rebuilds the index file (VACUUM) and then copies the WAL into
// it and truncates the WAL (wal_checkpoint(TRUNCATE)), retrying while a
// reader holds an older snapshot: afterwards neither index.db nor
// index.db-wal holds a page of deleted rows. Writers wait while it runs.
func (s *Store) Vacuum(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `VACUUM`); err != nil {
		return fmt.Errorf("vacuum %s: %w", s.path, err)
	}
	for attempt := 0; ; attempt++ {
		var busy, logPages, done int
		err := s.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logPages, &done)
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", s.path, err)
		}
		if busy == 0 {
			return nil
		}
		if attempt == 50 {
			return fmt.Errorf("checkpoint %s: readers kept the WAL busy; run the scrub again when the root is idle", s.path)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
