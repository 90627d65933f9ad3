package sqlstore_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"dshmem/sqlstore"
)

// foldEntries commits one fold that inserts n entries numbered from
// first.
func foldEntries(t *testing.T, s *sqlstore.Store, first, n int) {
	t.Helper()
	tx, err := s.BeginFold(context.Background())
	require.NoError(t, err)
	defer tx.Close()
	for i := first; i < first+n; i++ {
		row := sqlstore.EntryRow{ID: fmt.Sprintf("ws-ckpt/%06d", i), Scope: "ws-ckpt", Type: "fact",
			Title: "t", Content: fmt.Sprintf("content %d", i), Tags: "[]", Importance: 1, Status: "active", Version: 1}
		_, err := tx.InsertEntry(&row, uint64(i+1), "2026-08-18T10:00:00Z")
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit())
}

// waitFileChange polls path until its bytes differ from was, for at most
// within; it reports whether they did.
func waitFileChange(t *testing.T, path string, was []byte, within time.Duration) bool {
	t.Helper()
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		if !bytes.Equal(b, was) {
			return true
		}
	}
	return false
}

// TestCheckpointer: in WAL mode only a checkpoint writes index.db, so the
// file's bytes show when the background checkpointer copied. It copies in
// a pause after a commit, and also under commits that never pause (the
// WAL would otherwise grow as long as they last). The deadlines are far
// longer than the checkpointer's own bounds and shorter than its idle
// turn, so neither case passes by that turn.
func TestCheckpointer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	s, err := sqlstore.Open(path)
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()

	t.Run("AfterAPause", func(t *testing.T) {
		require.NoError(t, s.CheckpointAll(ctx))
		was, err := os.ReadFile(path)
		require.NoError(t, err)
		foldEntries(t, s, 0, 50)
		require.True(t, waitFileChange(t, path, was, 5*time.Second), "index.db unchanged 5 s after a commit: the checkpointer did not copy in the pause")
	})

	t.Run("UnderWritesThatNeverPause", func(t *testing.T) {
		require.NoError(t, s.CheckpointAll(ctx))
		was, err := os.ReadFile(path)
		require.NoError(t, err)
		var stop, folds atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; stop.Load() == 0; i++ {
				foldEntries(t, s, 1000+i*5, 5)
				folds.Add(1)
			}
		}()
		changed := waitFileChange(t, path, was, 5*time.Second)
		during := folds.Load()
		time.Sleep(50 * time.Millisecond)
		stillWriting := folds.Load() > during
		stop.Store(1)
		<-done
		require.True(t, changed, "index.db unchanged after 5 s of commits: the checkpointer waits for a pause that never comes")
		require.True(t, stillWriting, "the writer stopped before the copy was seen; the case was not the one meant")
	})
}
