package markdown

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteFileAtomic(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "a", "b", "global.md") // parents are created
		require.NoError(t, WriteFileAtomic(path, []byte("old"), 0o644))
		require.NoError(t, WriteFileAtomic(path, []byte("new content"), 0o600))
		wantFile(t, path, "new content")
		if fi, err := os.Stat(path); err != nil || runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
			t.Errorf("mode = %v, %v; want 0600", fi.Mode().Perm(), err)
		}
		wantOnly(t, filepath.Dir(path), "global.md")
	})
	t.Run("ErrPathIsDirectory", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "x.md")
		require.NoError(t, os.Mkdir(path, 0o755))
		err := WriteFileAtomic(path, []byte("data"), 0o644)
		require.Error(t, err, "got nil, want an error writing over a directory")
		wantOnly(t, dir, "x.md")
	})
	t.Run("ErrParentIsFile", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), nil, 0o644))
		err := WriteFileAtomic(filepath.Join(dir, "f", "x.md"), []byte("data"), 0o644)
		require.Error(t, err, "got nil, want an error under a file")
	})
}

func TestWriteFileAtomicFaults(t *testing.T) {
	errInjected := errors.New("injected")
	for _, step := range []string{"create", "write", "chmod", "sync", "close", "rename"} {
		t.Run("Err_"+step, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "global.md")
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
			err := writeFileAtomic(faultFS{step: step, err: errInjected}, path, []byte("new"), 0o644, true)
			require.ErrorIs(t, err, errInjected, "got %v, want the injected error", err)
			wantFile(t, path, "old")
			wantOnly(t, dir, "global.md")
		})
	}
	t.Run("ErrSyncDir", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "global.md")
		err := writeFileAtomic(faultFS{step: "syncdir", err: errInjected}, path, []byte("new"), 0o644, true)
		require.ErrorIs(t, err, errInjected, "got %v, want the injected error", err)
		wantFile(t, path, "new") // renamed in place, durability unknown
		wantOnly(t, dir, "global.md")
	})
}

// faultFS is the OS file system with one step failing.
type faultFS struct {
	step string
	err  error
}

func (f faultFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (f faultFS) Remove(name string) error                     { return os.Remove(name) }
func (f faultFS) Rename(o, n string) error {
	if f.step == "rename" {
		return f.err
	}
	return os.Rename(o, n)
}
func (f faultFS) SyncDir(dir string) error {
	if f.step == "syncdir" {
		return f.err
	}
	return osFS{}.SyncDir(dir)
}
func (f faultFS) CreateTemp(dir, pattern string) (TempFile, error) {
	if f.step == "create" {
		return nil, f.err
	}
	tf, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return faultFile{tf, f}, nil
}

type faultFile struct {
	*os.File
	fs faultFS
}

func (f faultFile) fail(step string) error {
	if f.fs.step == step {
		return f.fs.err
	}
	return nil
}
func (f faultFile) Write(b []byte) (int, error) {
	if err := f.fail("write"); err != nil {
		n, _ := f.File.Write(b[:len(b)/2]) // a partial write
		return n, err
	}
	return f.File.Write(b)
}
func (f faultFile) Chmod(m os.FileMode) error {
	if err := f.fail("chmod"); err != nil {
		return err
	}
	return f.File.Chmod(m)
}
func (f faultFile) Sync() error {
	if err := f.fail("sync"); err != nil {
		return err
	}
	return f.File.Sync()
}
func (f faultFile) Close() error {
	if err := f.fail("close"); err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}

func wantFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, want, string(got), "%s holds %q, want %q", path, got, want)
}

// wantOnly checks that dir holds exactly the given names (no temp files).
func wantOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, de := range des {
		got = append(got, de.Name())
	}
	require.Len(t, got, len(names), "%s holds %q, want %q", dir, got, names)
	for i := range got {
		require.Equal(t, names[i], got[i], "%s holds %q, want %q", dir, got, names)
	}
}
