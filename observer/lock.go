package observer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile is the name of the writer lock inside a root.
const LockFile = "writer.lock"

// ErrLocked says another process holds the root's writer lock.
var ErrLocked = errors.New("root is locked by another writer")

// LockedError names the process that holds the root.
type LockedError struct {
	Root string
	PID  int // 0 when the holder did not record its pid
}

func (e *LockedError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("%s is held by %s (one writer per root); stop it, wait for it to finish, or send the change to its server", e.Root, who)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// rootLock is an exclusive flock on <root>/writer.lock. The kernel
// drops it when the process dies, so a crash never leaves a stale lock;
// the pid written inside is only for the error message.
type rootLock struct{ f *os.File }

func lockRoot(root string) (*rootLock, error) {
	path := filepath.Join(root, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Root: root, PID: recordedPID(path)}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &rootLock{f: f}, nil
}

// HolderPID returns the pid recorded by the current holder of root's
// lock, or 0 when the root is not locked.
func HolderPID(root string) int {
	path := filepath.Join(root, LockFile)
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return 0
	}
	return recordedPID(path)
}

// recordedPID is the pid the holder wrote into the lock file at path, or
// 0 when there is none.
func recordedPID(path string) int {
	b, _ := os.ReadFile(path)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func (l *rootLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	// Leave the file: removing it would race with a new holder.
	err := l.f.Close()
	l.f = nil
	return err
}

// LockRoot takes the root's writer lock for work done outside an
// Engine (migrations). Call the returned function to release it.
func LockRoot(root string) (release func() error, err error) {
	lk, err := lockRoot(root)
	if err != nil {
		return nil, err
	}
	return lk.release, nil
}
