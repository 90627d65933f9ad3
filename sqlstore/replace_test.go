package sqlstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReplaceWith(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	live, err := Open(filepath.Join(dir, "index.db"))
	require.NoError(t, err)
	defer live.Close()
	const secret = "ws-secretstream0000000000"
	require.NoError(t, live.SetCursor(ctx, secret, 7))
	require.NoError(t, live.CheckpointAll(ctx))

	other, err := Open(filepath.Join(dir, "rebuilt.db"))
	require.NoError(t, err)
	require.NoError(t, other.SetCursor(ctx, "global", 3))
	require.NoError(t, other.Close())

	require.NoError(t, live.ReplaceWith(ctx, filepath.Join(dir, "rebuilt.db")))
	// Every connection of the pool sees the new content.
	for i := 0; i < 4; i++ {
		got, err := live.Cursors()
		require.NoError(t, err)
		require.Equal(t, map[string]uint64{"global": 3}, got)
	}
	require.NoError(t, live.Vacuum(ctx))
	for _, name := range []string{"index.db", "index.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		require.False(t, bytes.Contains(b, []byte(secret)), "%s still holds the old content", name)
	}
	// Writes go on.
	require.NoError(t, live.SetCursor(ctx, "global", 4))

	t.Run("ErrMissing", func(t *testing.T) {
		err := live.ReplaceWith(ctx, filepath.Join(dir, "nope.db"))
		require.Error(t, err)
		got, err := live.Cursors()
		require.NoError(t, err)
		require.Equal(t, map[string]uint64{"global": 4}, got, "a failed replace changes nothing")
	})
}
