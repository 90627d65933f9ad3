package events

import (
	"io"
	"os"
	"runtime"
	"sync"
)

// FS is the file-system seam of the log: everything the log does to the
// disk goes through it, so tests can inject faults (see FaultFS).
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(name string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
}

// File is an open file of an FS.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
}

// OSFS is the operating system's file system.
type OSFS struct{}

func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // an *os.File in a nil interface would not be nil
	}
	return f, nil
}
func (OSFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (OSFS) Remove(name string) error                     { return os.Remove(name) }
func (OSFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (OSFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (OSFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }

// syncDir makes the entries of dir durable (a created, renamed or removed
// file). Windows cannot fsync a directory; NTFS journals metadata.
func syncDir(fsys FS, dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// FaultFS wraps an FS and fails the Nth write, sync or rename (counting
// from 1 across all files, directory syncs included). After the fault it
// keeps failing every later write and sync, like a disk that went away,
// so no test sees a success after a failure by accident — unless
// Transient is set: then only the Nth operation fails, like a disk that
// was full for a moment, so a test can see what the log does once the
// cause is gone. Safe for concurrent use.
type FaultFS struct {
	FS        FS  // underlying file system; nil → OSFS
	FailWrite int // 1-based index of the write to fail; 0 never
	FailSync  int // 1-based index of the sync to fail; 0 never
	// FailRename is the 1-based index of the rename to fail; 0 never.
	// A failed rename changes nothing, and later ones fail too.
	FailRename int
	Partial    bool  // the failing write first writes half of its bytes (a torn write)
	Transient  bool  // only the Nth operation fails; the later ones succeed
	Err        error // injected error; nil → ErrInjected

	mu      sync.Mutex
	writes  int
	syncs   int
	renames int
	failed  bool
}

// Counts returns how many writes and syncs were attempted so far.
func (f *FaultFS) Counts() (writes, syncs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes, f.syncs
}

// Failed reports whether a fault was injected.
func (f *FaultFS) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func (f *FaultFS) base() FS {
	if f.FS == nil {
		return OSFS{}
	}
	return f.FS
}

func (f *FaultFS) err() error {
	if f.Err == nil {
		return ErrInjected
	}
	return f.Err
}

func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := f.base().OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}
func (f *FaultFS) Rename(oldpath, newpath string) error {
	if f.tick(&f.renames, f.FailRename) {
		return f.err()
	}
	return f.base().Rename(oldpath, newpath)
}
func (f *FaultFS) Remove(name string) error                     { return f.base().Remove(name) }
func (f *FaultFS) MkdirAll(path string, perm os.FileMode) error { return f.base().MkdirAll(path, perm) }
func (f *FaultFS) ReadDir(name string) ([]os.DirEntry, error)   { return f.base().ReadDir(name) }
func (f *FaultFS) Stat(name string) (os.FileInfo, error)        { return f.base().Stat(name) }

type faultFile struct {
	File
	fs *FaultFS
}

// tick counts one write or sync in *count and reports whether it must
// fail: it is the failAt-th one, or a fault was injected before.
func (f *FaultFS) tick(count *int, failAt int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	*count++
	if f.Transient {
		now := *count == failAt
		f.failed = f.failed || now
		return now
	}
	f.failed = f.failed || *count == failAt
	return f.failed
}

func (ff *faultFile) Write(p []byte) (int, error) {
	f := ff.fs
	if !f.tick(&f.writes, f.FailWrite) {
		return ff.File.Write(p)
	}
	n := 0
	if f.Partial && len(p) > 1 {
		n, _ = ff.File.Write(p[:len(p)/2])
	}
	return n, f.err()
}

func (ff *faultFile) Sync() error {
	f := ff.fs
	if f.tick(&f.syncs, f.FailSync) {
		return f.err()
	}
	return ff.File.Sync()
}
