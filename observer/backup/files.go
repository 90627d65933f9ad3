package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Modes: a backup holds everything the agents saw, so only its owner
// reads it; a restored root gets the modes the log writes (inside a
// root of mode 0700).
const (
	backupFileMode  os.FileMode = 0o600
	restoreFileMode os.FileMode = 0o644
)

// tmpSuffix marks a copy not yet renamed into place; a run removes the
// ones an interrupted run left.
const tmpSuffix = ".tmp-backup"

// hashPrefix returns the hex sha256 of the first size bytes of path.
func hashPrefix(path string, size int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, size))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if n != size {
		return "", fmt.Errorf("read %s: %d bytes, want %d (the file is shorter than recorded)", path, n, size)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copyPrefix copies the first size bytes of src to dst (created or
// truncated, with mode perm; missing directories get perm's owner
// bits as search bits too), fsyncs it and returns the copy's hex
// sha256. want, when set, is the sha256 the bytes must have; a copy
// that does not is removed and reported.
func copyPrefix(src string, size int64, dst, want string, perm os.FileMode) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), perm|perm>>2&0o111|0o100); err != nil {
		return "", err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(in, size))
	if err == nil && n != size {
		err = fmt.Errorf("%s has %d bytes, want %d (the file is shorter than recorded)", src, n, size)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err == nil && want != "" && sum != want {
		err = fmt.Errorf("%s does not match its manifest: sha256 %s, want %s", src, sum, want)
	}
	if err != nil {
		os.Remove(dst)
		return "", fmt.Errorf("copy %s: %w", src, err)
	}
	return sum, nil
}

// syncDir fsyncs a directory, so the renames and removals in it are
// durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// dirLock is an exclusive flock on <dir>/backup.lock: one process
// writes a backup directory at a time. The kernel drops it when the
// process dies.
type dirLock struct{ f *os.File }

func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock backup %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := os.ReadFile(path)
			who := "another process"
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
				who = "process " + strconv.Itoa(pid)
			}
			return nil, fmt.Errorf("%w: %s is being written by %s; wait for it to finish", ErrBusy, dir, who)
		}
		return nil, fmt.Errorf("lock backup %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() {
	if l != nil && l.f != nil {
		l.f.Close()
	}
}

// ErrBusy says another backup is writing the directory.
var ErrBusy = errors.New("backup: directory busy")

// within reports whether path is dir or inside it (both absolute and
// clean).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
