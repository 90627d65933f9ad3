package httpapi

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dshmem/markdown"
	"dshmem/observer"

	"github.com/stretchr/testify/require"
)

// brokenFS fails every create of a Markdown file while broken is set
// (a full disk), and passes everything to the OS otherwise.
type brokenFS struct {
	broken atomic.Bool
}

var errDiskFull = &os.PathError{Op: "open", Path: "(test)", Err: os.ErrPermission}

func (b *brokenFS) MkdirAll(path string, perm os.FileMode) error {
	return markdown.OS.MkdirAll(path, perm)
}
func (b *brokenFS) CreateTemp(dir, pattern string) (markdown.TempFile, error) {
	if b.broken.Load() {
		return nil, errDiskFull
	}
	return markdown.OS.CreateTemp(dir, pattern)
}
func (b *brokenFS) Rename(o, n string) error { return markdown.OS.Rename(o, n) }
func (b *brokenFS) Remove(n string) error    { return markdown.OS.Remove(n) }
func (b *brokenFS) SyncDir(d string) error   { return markdown.OS.SyncDir(d) }

// TestFilesWriteFailureReportedAndRetried: while the Markdown files
// cannot be written, the remember is still answered (the files are not
// part of an acknowledgement), /v1/healthz says the files are not
// written and why; once the cause is gone the server writes them by
// itself, with no further request, and healthz is clear again.
func TestFilesWriteFailureReportedAndRetried(t *testing.T) {
	b := &brokenFS{}
	b.broken.Store(true)
	root := t.TempDir()
	ts := startServerWith(t, root, observer.Options{Files: b}, ServerOptions{})
	ts.must(200, "POST", "/v1/remember", map[string]any{"global": true, "content": "Files fail for a while."}, nil)
	var h Health
	require.Eventually(t, func() bool {
		ts.must(200, "GET", "/v1/healthz", nil, &h)
		return h.Files != ""
	}, 20*time.Second, 20*time.Millisecond, "healthz never reported the failed files: %+v", h)
	require.Contains(t, h.Files, "permission denied", "the cause")
	require.Contains(t, h.Files, "the log and the index are not affected")
	b.broken.Store(false)
	require.Eventually(t, func() bool {
		h = Health{} // (files is left out when empty)
		ts.must(200, "GET", "/v1/healthz", nil, &h)
		return h.Files == ""
	}, 20*time.Second, 20*time.Millisecond, "the files were never written after the cause was gone: %+v", h)
	var found []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".md") {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "Files fail for a while.") {
				found = append(found, p)
			}
		}
		return nil
	})
	require.NotEmpty(t, found, "no Markdown file holds the entry remembered while the files failed")
}
