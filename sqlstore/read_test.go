package sqlstore_test

import (
	"context"
	"path/filepath"
	"testing"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"
	"dshmem/sqlstore/internal/storetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExistingEvents(t *testing.T) {
	s := storetest.SearchFixture(t)
	ctx := context.Background()
	ids := []string{"dsh:s1:1", "dsh:s1:3", "dsh:s1:99", "dsh:s2:5", `quote"d`}
	for range 3000 { // more ids than SQLite allows parameters in older builds
		ids = append(ids, "dsh:none")
	}
	got, err := s.ExistingEvents(ctx, "ws-a", ids)
	require.NoError(t, err)
	require.Len(t, got, 2, "got %v, want dsh:s1:1 and dsh:s1:3 (dsh:s2:5 is in another stream)", got)
	for _, id := range []string{"dsh:s1:1", "dsh:s1:3"} {
		ev, ok := got[id]
		require.True(t, ok, "%s missing", id)
		assert.NotZero(t, ev.Seq, "%s: no seq", id)
		assert.NotEmpty(t, ev.Type, "%s: no type", id)
		assert.NotEmpty(t, ev.Time, "%s: no time", id)
	}
	if got, err := s.ExistingEvents(ctx, "ws-a", nil); err != nil || len(got) != 0 {
		t.Errorf("no ids: got %v, %v", got, err)
	}
	// One id takes a query of its own: the same answer.
	for _, id := range []string{"dsh:s1:3", "dsh:s2:5", "dsh:none"} {
		one, err := s.ExistingEvents(ctx, "ws-a", []string{id})
		require.NoError(t, err)
		if ev, ok := got[id]; ok {
			assert.Equal(t, map[string]sqlstore.StoredEvent{id: ev}, one, id)
		} else {
			assert.Empty(t, one, id)
		}
	}
}

func TestStatsAndCursors(t *testing.T) {
	s := storetest.SearchFixture(t)
	st, err := s.Stats(context.Background())
	require.NoError(t, err)
	assert.False(t, st.Streams != 2 || st.Events != 206 || st.Episodes != 206 || st.Sessions != 2 || st.Entries != 0 || st.DBBytes <= 0, "got %+v", st)
	if c, err := s.Cursor("ws-b"); err != nil || c != 201 {
		t.Errorf("got cursor %d, %v; want 201", c, err)
	}
	if c, err := s.Cursor("ws-none"); err != nil || c != 0 {
		t.Errorf("got cursor %d, %v; want 0", c, err)
	}
	cur, err := s.Cursors()
	assert.False(t, err != nil || len(cur) != 2 || cur["ws-a"] != 5, "got %v, %v", cur, err)
}

// A migration that adds a projection resets the cursors, so the projector
// folds everything again instead of leaving the new table empty.
func TestDownUpResetsCursors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "index.db")
	s, err := sqlstore.Open(p)
	require.NoError(t, err)
	require.NoError(t, projector.New(s).Fold(context.Background(), []events.Envelope{
		storetest.Msg("ws-a", 1, events.TypeMemoryRemember, "s", map[string]any{"content": "记住这个"}),
	}))
	s.Close()
	require.NoError(t, sqlstore.MigrateDownTo(p, 1))
	require.NoError(t, sqlstore.MigrateUp(p))
	s, err = sqlstore.Open(p)
	require.NoError(t, err)
	defer s.Close()
	st, err := s.Stats(context.Background())
	require.NoError(t, err)
	c, _ := s.Cursor("ws-a")
	assert.False(t, c != 0 || st.Events != 0 || st.Entries != 0, "after down and up: cursor %d, %+v; want everything reset", c, st)
}
