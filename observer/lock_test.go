package observer

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLockRoot: one writer per root. flock locks belong to an open file,
// so a second lock taken in this same process conflicts as another
// process's would.
func TestLockRoot(t *testing.T) {
	root := t.TempDir()
	pid := HolderPID(root)
	require.EqualValues(t, 0, pid, "no lock file yet: got holder %d, want 0", pid)
	release, err := LockRoot(root)
	require.NoError(t, err)
	t.Run("HolderPID", func(t *testing.T) {
		got := HolderPID(root)
		require.Equal(t, os.Getpid(), got, "got %d, want %d", got, os.Getpid())
	})
	t.Run("ErrLocked", func(t *testing.T) {
		_, err := LockRoot(root)
		var le *LockedError
		require.True(t, errors.As(err, &le), "got %v, want a *LockedError wrapping ErrLocked", err)
		require.ErrorIs(t, err, ErrLocked, "got %v, want a *LockedError wrapping ErrLocked", err)
		require.Equal(t, os.Getpid(), le.PID, "got %+v, want root %s held by %d", le, root, os.Getpid())
		require.Equal(t, root, le.Root, "got %+v, want root %s held by %d", le, root, os.Getpid())
		msg := err.Error()
		require.Contains(t, msg, root, "got %q, want it to name the root and the rule", msg)
		require.Contains(t, msg, "one writer per root", "got %q, want it to name the root and the rule", msg)
	})
	t.Run("Released", func(t *testing.T) {
		require.NoError(t, release())
		got := HolderPID(root)
		require.EqualValues(t, 0, got, "got holder %d after release, want 0", got)
		again, err := LockRoot(root)
		require.NoError(t, err, "lock again after release")
		require.NoError(t, again())
	})
}
