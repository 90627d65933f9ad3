package backup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/observer/backup"
	"dshmem/observer/broker"
	"dshmem/projector"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRotateMovesOldSessionFiles(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "r")
	eng := openRoot(t, root)
	fill(t, eng, "a", 40) // blocks on 2026-08-01 … 2026-09-09
	now := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	oldDay, newDay := "2026-08-02", "2026-09-05"
	oldBytes, err := os.ReadFile(filepath.Join(root, projector.DayPath(oldDay)))
	require.NoError(t, err)

	m, err := broker.Maintenance(ctx, eng, observer.GlobalStream, now)
	require.NoError(t, err)
	require.Contains(t, strings.Join(m, "\n"), "31 session files under sessions/ are older than 30 days", "before: got %v", m)

	rep, err := backup.Rotate(ctx, eng, now)
	require.NoError(t, err)
	assert.Equal(t, "2026-09-01", rep.Before)
	assert.Len(t, rep.Days, 31, "got %v", rep.Days)
	assert.NotZero(t, rep.EventSeq)

	_, err = os.Stat(filepath.Join(root, projector.DayPath(oldDay)))
	assert.ErrorIs(t, err, os.ErrNotExist, "an old day file stays in sessions/")
	moved, err := os.ReadFile(filepath.Join(root, projector.ArchivedDayPath(oldDay)))
	require.NoError(t, err, "the old day file is not in sessions/archive/")
	assert.Equal(t, string(oldBytes), string(moved), "a moved file keeps its bytes")
	_, err = os.Stat(filepath.Join(root, projector.DayPath(newDay)))
	assert.NoError(t, err, "a recent day file was moved")
	_, err = os.Stat(filepath.Join(root, projector.ArchivedDayPath(newDay)))
	assert.ErrorIs(t, err, os.ErrNotExist)

	m, err = broker.Maintenance(ctx, eng, observer.GlobalStream, now)
	require.NoError(t, err)
	assert.NotContains(t, strings.Join(m, "\n"), "session files", "after the rotation: got %v", m)

	again, err := backup.Rotate(ctx, eng, now)
	require.NoError(t, err)
	assert.Zero(t, again.EventSeq, "nothing left to move, yet an event was written")
	assert.Empty(t, again.Days)

	// A block of an old day that arrives late goes straight to the archive.
	ingest(t, eng, [][]byte{line("late:1", "compaction/summary", "2026-08-03T08:00:00Z", "late", "/w/alpha",
		map[string]any{"compactionId": "late-c1", "text": "an import of an old session"})})
	require.NoError(t, eng.WriteFiles(ctx))
	b, err := os.ReadFile(filepath.Join(root, projector.ArchivedDayPath("2026-08-03")))
	require.NoError(t, err)
	assert.Contains(t, string(b), "an import of an old session")
	_, err = os.Stat(filepath.Join(root, projector.DayPath("2026-08-03")))
	assert.ErrorIs(t, err, os.ErrNotExist)

	require.NoError(t, eng.Close())
	verifyReplay(t, root) // the fold moved the files: replay moves the same ones
}

func TestRotateIgnoresBadCutoff(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "r")
	eng := openRoot(t, root)
	fill(t, eng, "a", 8)
	// Events a producer wrote its own way move nothing.
	ingest(t, eng, [][]byte{
		line("rot:1", "maintenance/rotate", "2026-10-01T00:00:00Z", "", "", map[string]any{"before": "2026-13-45"}),
		line("rot:2", "maintenance/rotate", "2026-10-01T00:00:01Z", "", "", map[string]any{"before": 7}),
		line("rot:3", "maintenance/rotate", "2026-10-01T00:00:02Z", "", "", nil),
	})
	require.NoError(t, eng.WriteFiles(ctx))
	_, err := os.Stat(filepath.Join(root, projector.DayPath("2026-08-02")))
	require.NoError(t, err)
	ents, _ := os.ReadDir(filepath.Join(root, projector.SessionsDir, projector.ArchiveDir))
	assert.Empty(t, ents)
	require.NoError(t, eng.Close())
	verifyReplay(t, root)
}

// TestMaintenanceSoftLimits: files over their soft limits are reported
// with their real sizes and the limits of broker.
func TestMaintenanceSoftLimits(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "r")
	eng := openRoot(t, root)
	var lines [][]byte
	for i := 0; i < 60; i++ {
		lines = append(lines,
			line(fmt.Sprintf("g%d", i), "memory/remember", "2026-08-01T09:00:00Z", "", "",
				map[string]any{"content": fmt.Sprintf("Rule %d: keep every public function documented, with an example of its use", i), "type": "rule"}),
			line(fmt.Sprintf("w%d", i), "memory/remember", "2026-08-01T09:00:00Z", "", "/w/alpha",
				map[string]any{"content": fmt.Sprintf("Decision %d: the build uses make, not a shell script, for target %d", i, i), "type": "decision"}))
	}
	ingest(t, eng, lines)
	require.NoError(t, eng.WriteFiles(ctx))
	scope := eng.Scope("/w/alpha").Stream
	m, err := broker.Maintenance(ctx, eng, scope, time.Date(2026, 8, 2, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	got := strings.Join(m, "\n")
	for _, f := range []struct {
		rel   string
		limit int64
	}{{projector.GlobalFile, broker.GlobalSoftLimit}, {projector.IndexFile, broker.IndexSoftLimit}, {projector.SummaryPath(scope), broker.SummarySoftLimit}} {
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(f.rel)))
		require.NoError(t, err)
		if st.Size() <= f.limit {
			assert.NotContains(t, got, f.rel+" is", "%s is %d bytes, under its limit", f.rel, st.Size())
			continue
		}
		assert.Contains(t, got, fmt.Sprintf("%s is %d bytes, over its soft limit of %d", f.rel, st.Size(), f.limit))
	}
	assert.Contains(t, got, projector.GlobalFile+" is", "the fixture should put global.md over its limit: got %v", m)
	assert.Equal(t, int64(4608), int64(broker.GlobalSoftLimit))
	assert.Equal(t, int64(4608), int64(broker.IndexSoftLimit))
	assert.Equal(t, int64(4096), int64(broker.SummarySoftLimit))
}
