package events

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDrop(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		base := t.TempDir()
		dir := filepath.Join(base, "log")
		l := openLog(t, dir, Options{SegmentSize: 4 << 10})
		for i := 0; i < 20; i++ {
			mustAppend(t, l, "ws-a", testEvents(i*20, 20)) // several segments, the last one open
		}
		mustAppend(t, l, "keep", testEvents(0, 3))
		n, segs := l.StreamBytes("ws-a")
		require.Positive(t, n)
		require.Greater(t, segs, 1, "the test wants a sealed segment and an open one")

		to := filepath.Join(base, "trash")
		require.NoError(t, l.Drop("ws-a", to))
		assert.EqualValues(t, 0, l.LastSeq("ws-a"))
		assert.Equal(t, []string{"keep"}, l.Streams())
		_, err := os.Stat(filepath.Join(dir, "ws-a"))
		assert.ErrorIs(t, err, os.ErrNotExist, "the stream's directory is still in the log")
		moved, err := os.ReadDir(to)
		require.NoError(t, err)
		assert.Len(t, moved, segs, "the segments are in the trash")

		// A fresh stream of the same name starts at seq 1, in a new directory.
		got := mustAppend(t, l, "ws-a", testEvents(500, 2))
		assert.EqualValues(t, 1, got[0].Seq)
		require.NoError(t, l.Close())
		l2 := openLog(t, dir, Options{})
		assert.EqualValues(t, 2, l2.LastSeq("ws-a"))
		assert.EqualValues(t, 3, l2.LastSeq("keep"))
	})
	t.Run("ErrUnknownStream", func(t *testing.T) {
		l := openLog(t, t.TempDir(), Options{})
		err := l.Drop("nope", filepath.Join(t.TempDir(), "x"))
		assert.ErrorIs(t, err, ErrUnknownStream)
	})
	t.Run("ErrReadOnly", func(t *testing.T) {
		dir := t.TempDir()
		l := openLog(t, dir, Options{})
		mustAppend(t, l, "s", testEvents(0, 1))
		ro, err := OpenLogReadOnly(dir, Options{})
		require.NoError(t, err)
		assert.ErrorIs(t, ro.Drop("s", filepath.Join(t.TempDir(), "x")), ErrReadOnly)
	})
	t.Run("RenameFailsKeepsStream", func(t *testing.T) {
		dir := t.TempDir()
		l := openLog(t, dir, Options{})
		mustAppend(t, l, "s", testEvents(0, 3))
		// A target whose parent does not exist: the rename fails.
		err := l.Drop("s", filepath.Join(t.TempDir(), "no", "such", "dir"))
		require.Error(t, err)
		assert.EqualValues(t, 3, l.LastSeq("s"), "the stream is still there")
		_, err = l.Append(context.Background(), "s", testEvents(3, 1))
		assert.True(t, errors.Is(err, ErrStreamFailed), "append after a failed drop: got %v, want ErrStreamFailed", err)
		assert.ErrorIs(t, l.Close(), ErrStreamFailed, "Close reports the stream that failed")
		l2 := openLog(t, dir, Options{})
		assert.EqualValues(t, 3, l2.LastSeq("s"), "reopened: the stream is whole")
	})
}
