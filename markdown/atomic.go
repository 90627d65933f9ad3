package markdown

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// WriteFileAtomic replaces the file at path with data so that a reader or
// a crash sees either the old file or the new one, never a part: it
// creates the parent directories (0755), writes a temporary file in the
// same directory (".<name>.tmp-<random>"), sets its mode to perm exactly
// (no umask), fsyncs it, renames it over path and fsyncs the directory.
// On any error before the rename the temporary file is removed and path is
// untouched. An error from the final directory fsync means the new file is
// in place but may not survive a crash.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeFileAtomic(osFS{}, path, data, perm, true)
}

// WriteFileAtomicNoDirSync is WriteFileAtomic without the final fsync of
// the directory, for a writer that puts several files in place and then
// makes their renames durable with one SyncDir per directory. The file's
// bytes are fsynced before the rename, so a crash at any point leaves
// the old file or the whole new one, never a part.
func WriteFileAtomicNoDirSync(path string, data []byte, perm os.FileMode) error {
	return writeFileAtomic(osFS{}, path, data, perm, false)
}

// SyncDir fsyncs a directory, making the renames into it durable.
func SyncDir(dir string) error { return osFS{}.SyncDir(dir) }

// FS is the file-system seam of the atomic writes, so tests can fail
// any step (WriteFileAtomicFS; projector.Projector.FS).
type FS interface {
	MkdirAll(path string, perm os.FileMode) error
	CreateTemp(dir, pattern string) (TempFile, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	SyncDir(dir string) error
}

// TempFile is a temporary file an FS created.
type TempFile interface {
	io.Writer
	Name() string
	Chmod(mode os.FileMode) error
	Sync() error
	Close() error
}

// OS is the operating system's file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) CreateTemp(dir, pattern string) (TempFile, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err // an *os.File in a nil interface would not be nil
	}
	return f, nil
}

// SyncDir makes a rename in dir durable. Windows cannot fsync a
// directory; NTFS journals metadata.
func (osFS) SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// WriteFileAtomicFS is WriteFileAtomic (syncDir true) or
// WriteFileAtomicNoDirSync (false) through fsys.
func WriteFileAtomicFS(fsys FS, path string, data []byte, perm os.FileMode, syncDir bool) error {
	return writeFileAtomic(fsys, path, data, perm, syncDir)
}

func writeFileAtomic(fsys FS, path string, data []byte, perm os.FileMode, syncDir bool) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" {
		return fmt.Errorf("write %q: no file name", path)
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: create directory: %w", path, err)
	}
	f, err := fsys.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: create temporary file: %w", path, err)
	}
	tmp, closed, renamed := f.Name(), false, false
	defer func() {
		if err == nil || renamed {
			return
		}
		if !closed {
			f.Close()
		}
		fsys.Remove(tmp)
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: set mode: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", tmp, err)
	}
	closed = true
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", tmp, err)
	}
	if err = fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: rename temporary file over it: %w", path, err)
	}
	renamed = true
	if !syncDir {
		return nil
	}
	if err = fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	return nil
}
