package sqlstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackupQueries(t *testing.T) {
	s, evs := queryFixture(t)
	ctx := context.Background()
	t.Run("LastBackup", func(t *testing.T) {
		last, first, err := s.LastBackup(ctx)
		require.NoError(t, err)
		assert.Equal(t, evs[11].Time, last, "the newest maintenance/backup")
		assert.Empty(t, first, "with a backup, the oldest event is not asked for")
		empty, err := sqlstore.Open(filepath.Join(t.TempDir(), "index.db"))
		require.NoError(t, err)
		defer empty.Close()
		require.NoError(t, projector.New(empty).Fold(ctx, []events.Envelope{
			{V: 1, Stream: qWS, Seq: 1, ID: "a", Type: events.TypeUserMessage, Time: "2026-08-18T10:00:00Z"},
			{V: 1, Stream: qWS, Seq: 2, ID: "b", Type: events.TypeUserMessage, Time: "2026-01-05T10:00:00Z"}, // imported later
		}))
		last, first, err = empty.LastBackup(ctx)
		require.NoError(t, err)
		assert.Empty(t, last)
		assert.Equal(t, "2026-01-05T10:00:00Z", first, "the oldest event, wherever it is in the log")
	})
	t.Run("CountEventsAfter", func(t *testing.T) {
		n, err := s.CountEventsAfter(ctx, qWS2, 0, events.TypeMaintenanceBackup)
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "qWS2 holds a message and a backup record")
		n, err = s.CountEventsAfter(ctx, qWS2, 1, events.TypeMaintenanceBackup)
		require.NoError(t, err)
		assert.Zero(t, n, "after seq 1 only the backup record")
		n, err = s.CountEventsAfter(ctx, qWS, 5, "")
		require.NoError(t, err)
		assert.EqualValues(t, 5, n)
	})
	t.Run("VacuumInto", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "copy.db")
		cur, err := s.VacuumInto(ctx, p)
		require.NoError(t, err)
		want, err := s.Cursors()
		require.NoError(t, err)
		assert.Equal(t, want, cur)
		_, err = s.VacuumInto(ctx, p)
		require.Error(t, err, "a snapshot never overwrites a file")
		ents, err := os.ReadDir(filepath.Dir(p))
		require.NoError(t, err)
		assert.Len(t, ents, 1, "reading the copy's cursors leaves no -wal or -shm")
	})
}

func TestRotationRows(t *testing.T) {
	s, err := sqlstore.Open(filepath.Join(t.TempDir(), "index.db"))
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	var evs []events.Envelope
	for i, day := range []string{"2026-08-01", "2026-08-03", "2026-08-03", "2026-09-10"} {
		evs = append(evs, events.Envelope{V: 1, Stream: qWS, Seq: uint64(i + 1), ID: day + string(rune('a'+i)), Type: events.TypeCompactionSummary,
			Time: day + "T10:00:00Z", Data: []byte(`{"compactionId":"c` + string(rune('a'+i)) + `","text":"x"}`)})
	}
	require.NoError(t, projector.New(s).Fold(ctx, evs))
	days, err := s.Reader().BlockDaysBetween(ctx, "", "2026-09-01")
	require.NoError(t, err)
	assert.Equal(t, []string{"2026-08-01", "2026-08-03"}, days)
	days, err = s.Reader().BlockDaysBetween(ctx, "2026-08-02", "2026-12-01")
	require.NoError(t, err)
	assert.Equal(t, []string{"2026-08-03", "2026-09-10"}, days)
	got, err := s.Reader().Rotated(ctx)
	require.NoError(t, err)
	assert.Empty(t, got)
	rot := func(seq uint64, before string) events.Envelope {
		return events.Envelope{V: 1, Stream: "global", Seq: seq, ID: "rot" + before, Type: events.TypeMaintenanceRotate,
			Time: "2026-10-01T00:00:00Z", Data: []byte(`{"before":"` + before + `"}`)}
	}
	require.NoError(t, projector.New(s).Fold(ctx, []events.Envelope{rot(1, "2026-09-01"), rot(2, "2026-08-15")}))
	got, err = s.Reader().Rotated(ctx)
	require.NoError(t, err)
	assert.Equal(t, "2026-09-01", got, "the greatest cut-off wins, in any order")
}

// TestRotationMigrationFillsFromEvents: migration 00010 sets the cut-off
// from the maintenance/rotate events already folded, with the fold's
// rule (a real date; the greatest wins).
func TestRotationMigrationFillsFromEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	s, err := sqlstore.Open(path)
	require.NoError(t, err)
	ctx := context.Background()
	var evs []events.Envelope
	for i, before := range []string{"2026-08-01", "2026-02-30", "2026-13-01", "2026-07-15"} {
		evs = append(evs, events.Envelope{V: 1, Stream: "global", Seq: uint64(i + 1), ID: before, Type: events.TypeMaintenanceRotate,
			Time: "2026-10-01T00:00:00Z", Data: []byte(`{"before":"` + before + `"}`)})
	}
	require.NoError(t, projector.New(s).Fold(ctx, evs))
	require.NoError(t, s.Close())
	applied, err := sqlstore.MigrationStatus(path)
	require.NoError(t, err)
	var prev int64
	for _, m := range applied {
		if m.Version < 10 && m.Applied {
			prev = m.Version
		}
	}
	require.NoError(t, sqlstore.MigrateDownTo(path, prev))
	s, err = sqlstore.Open(path)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Reader().Rotated(ctx)
	require.NoError(t, err)
	assert.Equal(t, "2026-08-01", got)
}

// The oldest event time is kept by folds (event_span): lowered by an
// older event in a later fold of another stream, taken again from the
// events left by a purge, and filled by migration 00013 from the events
// an index already held.
func TestOldestEventTime(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	s, err := sqlstore.Open(path)
	require.NoError(t, err)
	p := projector.New(s)
	first := func() string {
		t.Helper()
		_, f, err := s.LastBackup(ctx)
		require.NoError(t, err)
		return f
	}
	assert.Empty(t, first(), "an empty index")
	require.NoError(t, p.Fold(ctx, []events.Envelope{
		{V: 1, Stream: qWS, Seq: 1, ID: "a", Type: events.TypeUserMessage, Time: "2026-08-18T10:00:00Z"},
		{V: 1, Stream: qWS, Seq: 2, ID: "b", Type: events.TypeUserMessage, Time: "2026-08-17T10:00:00Z"},
	}))
	assert.Equal(t, "2026-08-17T10:00:00Z", first())
	require.NoError(t, p.Fold(ctx, []events.Envelope{
		{V: 1, Stream: qWS2, Seq: 1, ID: "c", Type: events.TypeUserMessage, Time: "2026-01-05T10:00:00Z"},
	}))
	assert.Equal(t, "2026-01-05T10:00:00Z", first(), "another stream's older event, folded later")
	require.NoError(t, p.Fold(ctx, []events.Envelope{
		{V: 1, Stream: qWS, Seq: 3, ID: "d", Type: events.TypeUserMessage, Time: "2026-09-01T10:00:00Z"},
	}))
	assert.Equal(t, "2026-01-05T10:00:00Z", first(), "a newer event changes nothing")
	_, err = s.PurgeStream(ctx, qWS2)
	require.NoError(t, err)
	assert.Equal(t, "2026-08-17T10:00:00Z", first(), "the purged stream held the oldest")

	// An index from before migration 00013: the row comes from its events.
	require.NoError(t, s.Close())
	require.NoError(t, sqlstore.MigrateDownTo(path, 12))
	require.NoError(t, sqlstore.MigrateUp(path))
	s, err = sqlstore.Open(path)
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, "2026-08-17T10:00:00Z", first())
	_, err = s.PurgeStream(ctx, qWS)
	require.NoError(t, err)
	assert.Empty(t, first(), "no events left")
}
