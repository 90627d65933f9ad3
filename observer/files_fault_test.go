package observer_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"dshmem/markdown"
	"dshmem/observer"
	"dshmem/replay"

	"github.com/stretchr/testify/require"
)

// mdFaultFS is the Markdown writer's file system with one fault: the
// at-th operation that changes the disk (create, write, sync, rename,
// remove, directory sync; counted from 1) fails with err, once. With
// short set, a failing write first writes half of its bytes. at 0 only
// counts.
type mdFaultFS struct {
	at    int
	err   error
	short bool

	mu    sync.Mutex
	n     int
	ops   []string // every operation, in order
	fired string   // the operation that failed
}

func (f *mdFaultFS) fail(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.ops = append(f.ops, op)
	if f.n == f.at {
		f.fired = op
		return f.err
	}
	return nil
}

func (f *mdFaultFS) MkdirAll(path string, perm os.FileMode) error {
	return markdown.OS.MkdirAll(path, perm)
}

func (f *mdFaultFS) CreateTemp(dir, pattern string) (markdown.TempFile, error) {
	if err := f.fail("create " + dir); err != nil {
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(dir, pattern), Err: err}
	}
	t, err := markdown.OS.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &mdFaultFile{TempFile: t, fs: f}, nil
}

func (f *mdFaultFS) Rename(oldpath, newpath string) error {
	if err := f.fail("rename " + newpath); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return markdown.OS.Rename(oldpath, newpath)
}

func (f *mdFaultFS) Remove(name string) error {
	if err := f.fail("remove " + name); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return markdown.OS.Remove(name)
}

func (f *mdFaultFS) SyncDir(dir string) error {
	if err := f.fail("sync directory " + dir); err != nil {
		return &fs.PathError{Op: "sync", Path: dir, Err: err}
	}
	return markdown.OS.SyncDir(dir)
}

type mdFaultFile struct {
	markdown.TempFile
	fs *mdFaultFS
}

func (f *mdFaultFile) Write(p []byte) (int, error) {
	if err := f.fs.fail("write " + f.Name()); err != nil {
		n := 0
		if f.fs.short {
			n, _ = f.TempFile.Write(p[:len(p)/2])
		}
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	return f.TempFile.Write(p)
}

func (f *mdFaultFile) Sync() error {
	if err := f.fs.fail("sync " + f.Name()); err != nil {
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	return f.TempFile.Sync()
}

// filesWorkload is a representative run of the Markdown writer: two
// workspaces' sessions (session files, the scopes' pages), remembers in
// a workspace and globally (knowledge/, global.md, index.md), a forget
// (a page rewritten, a line removed), a session's end. After each step
// the queued files are written; it returns the errors of those writes
// and the ids of the entries acknowledged.
func filesWorkload(t *testing.T, eng *observer.Engine) (werrs []error, acked []string) {
	t.Helper()
	ctx := context.Background()
	step := func(do func()) {
		do()
		if err := eng.WriteFiles(ctx); err != nil {
			werrs = append(werrs, err)
		}
	}
	for i, ws := range []string{"/home/u/alpha", "/home/u/beta"} {
		sid := fmt.Sprintf("fs%d", i)
		step(func() {
			ingestLines(t, eng,
				fmt.Sprintf(`{"id":"%s:0","type":"session/start","time":"2026-08-18T10:00:00Z","session":"%s","cwd":%q,"data":{"origin":"top"}}`, sid, sid, ws),
				fmt.Sprintf(`{"id":"%s:1","type":"user/message","time":"2026-08-18T10:00:01Z","session":"%s","data":{"text":"the migration of %s fails"}}`, sid, sid, ws))
		})
	}
	for _, r := range []observer.RememberRequest{
		{Cwd: "/home/u/alpha", Content: "Migrations run with goose, never by hand.", Type: "decision", Time: memT0},
		{Cwd: "/home/u/beta", Content: "The beta service deploys blue green.", Type: "fact", Time: memT0},
		{Content: "Answer in English.", Type: "preference", Time: memT0},
	} {
		step(func() {
			en, err := eng.Remember(ctx, r)
			require.NoError(t, err, "remember (the files do not hold up an acknowledgement)")
			acked = append(acked, en.ID)
		})
	}
	step(func() {
		_, err := eng.Forget(ctx, acked[1], "moved")
		require.NoError(t, err)
	})
	step(func() {
		ingestLines(t, eng, `{"id":"fs0:2","type":"session/end","time":"2026-08-18T10:05:00Z","session":"fs0","data":{"reason":"exit"}}`)
	})
	return werrs, acked
}

func ingestLines(t *testing.T, eng *observer.Engine, lines ...string) {
	t.Helper()
	bs := make([][]byte, len(lines))
	for i, l := range lines {
		bs[i] = []byte(l)
	}
	res, _, err := eng.Ingest(context.Background(), bs)
	require.NoError(t, err)
	require.Zero(t, res.Rejected, "rejected: %+v", res)
}

// TestFilesFaultMatrix fails each operation of the Markdown writer in
// turn — every create, write, sync, rename, remove and directory sync of
// a representative workload — with EIO, with ENOSPC, and as a short
// write (half the bytes, then ENOSPC). Each time: the write of the
// files reports the error with its cause; no acknowledgement waited for
// the files (each remember and forget was answered, and the log and
// index hold them); and once the fault is gone the same engine, not
// reopened, writes the files again: every projection file equals a
// rebuild from the log byte for byte, and no temporary file is left.
func TestFilesFaultMatrix(t *testing.T) {
	counter := &mdFaultFS{}
	{
		eng, err := observer.Open(context.Background(), t.TempDir(), observer.Options{Files: counter, FilesInterval: -1})
		require.NoError(t, err)
		werrs, _ := filesWorkload(t, eng)
		require.Empty(t, werrs)
		require.NoError(t, eng.Close())
	}
	ops := counter.n
	require.Greater(t, ops, 10, "the workload hardly writes files")
	kinds := []struct {
		name  string
		err   error
		short bool
	}{{"EIO", syscall.EIO, false}, {"ENOSPC", syscall.ENOSPC, false}, {"Short", syscall.ENOSPC, true}}
	for _, k := range kinds {
		for at := 1; at <= ops; at++ {
			if k.short && !strings.HasPrefix(counter.ops[at-1], "write ") {
				continue // a short write is a write's fault
			}
			t.Run(fmt.Sprintf("%s%d", k.name, at), func(t *testing.T) {
				ffs := &mdFaultFS{at: at, err: k.err, short: k.short}
				root := t.TempDir()
				eng, err := observer.Open(context.Background(), root, observer.Options{Files: ffs, FilesInterval: -1})
				require.NoError(t, err)
				defer eng.Close()
				werrs, acked := filesWorkload(t, eng)
				if ffs.fired == "" {
					t.Skipf("operation %d of %d not reached (the workload's writes vary by a few)", at, ops)
				}
				require.Len(t, werrs, 1, "fault at %s: the write of the files reports it once", ffs.fired)
				require.ErrorIs(t, werrs[0], k.err, "fault at %s: got %v", ffs.fired, werrs[0])
				// The acknowledged writes are in the index (and so in the log).
				for _, id := range acked {
					_, err := eng.Entry(context.Background(), id)
					require.NoError(t, err, "fault at %s: acknowledged entry %s", ffs.fired, id)
				}
				// The fault is gone: the same engine writes the files again.
				require.NoError(t, eng.WriteFiles(context.Background()), "fault at %s: the write after the fault", ffs.fired)
				requireFilesEqualRebuild(t, eng, root, ffs.fired)
			})
		}
	}
}

// requireFilesEqualRebuild checks that every projection file under root
// equals a rebuild of eng's log, and that no temporary file is left.
func requireFilesEqualRebuild(t *testing.T, eng *observer.Engine, root, why string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "rebuilt")
	_, err := replay.Rebuild(context.Background(), eng.Log(), dir, replay.Options{})
	require.NoError(t, err)
	want, err := replay.ProjectionFiles(dir)
	require.NoError(t, err)
	got, err := replay.ProjectionFiles(root)
	require.NoError(t, err)
	require.Equal(t, want, got, "after a fault at %s: the files", why)
	for _, rel := range want {
		a, err := os.ReadFile(filepath.Join(dir, rel))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(root, rel))
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), "after a fault at %s: %s differs from the rebuild:\n%s\n--- rebuilt:\n%s", why, rel, b, a)
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("after a fault at %s: temporary file %s left", why, p)
		}
		return nil
	})
}
