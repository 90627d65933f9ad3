package observer

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLockRoot: one writer per root. flock locks belong to an open file,
// so a second lock taken in this same process conflicts as another
// process's would.
func TestLockRoot(t *testing.T) {
	root := t.TempDir()
	if pid := HolderPID(root); pid != 0 {
		t.Fatalf("no lock file yet: got holder %d, want 0", pid)
	}
	release, err := LockRoot(root)
	require.NoError(t, err)
	t.Run("HolderPID", func(t *testing.T) {
		if got := HolderPID(root); got != os.Getpid() {
			t.Fatalf("got %d, want %d", got, os.Getpid())
		}
	})
	t.Run("ErrLocked", func(t *testing.T) {
		_, err := LockRoot(root)
		var le *LockedError
		require.True(t, errors.As(err, &le), "got %v, want a *LockedError wrapping ErrLocked", err)
		require.ErrorIs(t, err, ErrLocked, "got %v, want a *LockedError wrapping ErrLocked", err)
		require.Equal(t, os.Getpid(), le.PID, "got %+v, want root %s held by %d", le, root, os.Getpid())
		require.Equal(t, root, le.Root, "got %+v, want root %s held by %d", le, root, os.Getpid())
		if msg := err.Error(); !strings.Contains(msg, root) || !strings.Contains(msg, "one writer per root") {
			t.Fatalf("got %q, want it to name the root and the rule", msg)
		}
	})
	t.Run("Released", func(t *testing.T) {
		require.NoError(t, release())
		if got := HolderPID(root); got != 0 {
			t.Fatalf("got holder %d after release, want 0", got)
		}
		again, err := LockRoot(root)
		require.NoError(t, err, "lock again after release")
		require.NoError(t, again())
	})
}
