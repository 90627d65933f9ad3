package dsh

import (
	"io"

	"dshmem/observer/dsh/dshtest"
)

// The writers of host-framed logs are test helpers and live in dshtest.
// These two forwarders remain only because observer's importer and
// watcher tests call them as dsh.WriteZstd and dsh.EncodeFrame; when
// those tests call dshtest instead (issue 11, as they move into their
// subpackages), this file goes.

// Deprecated: use dshtest.WriteZstd.
func WriteZstd(w io.Writer, lines [][]byte, batch int) error {
	return dshtest.WriteZstd(w, lines, batch)
}

// Deprecated: use dshtest.EncodeFrame.
func EncodeFrame(content []byte) ([]byte, error) { return dshtest.EncodeFrame(content) }
