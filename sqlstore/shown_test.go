package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"dshmem/events"
	"dshmem/migrations"
	"dshmem/projector"
	"dshmem/sqlstore"
)

// TestShownBackfill checks that migration 00004 fills the shown table
// from memory/shown events already in the index exactly as the
// projector's fold does.
func TestShownBackfill(t *testing.T) {
	s, err := sqlstore.Open(filepath.Join(t.TempDir(), "index.db"))
	require.NoError(t, err)
	defer s.Close()
	seq := uint64(0)
	event := func(stream, typ, session string, data map[string]any) events.Envelope {
		seq++
		b, _ := json.Marshal(data)
		return events.Envelope{V: 1, Stream: stream, Seq: seq, ID: fmt.Sprintf("t:%s:%d", stream, seq),
			Type: typ, Time: "2026-08-18T10:00:00Z", Session: session, Data: b}
	}
	evs := []events.Envelope{
		event("ws-a", events.TypeMemoryShown, "s1", map[string]any{"entries": []string{"m-1", "m-2", "m-1"}, "session": "s1", "mode": "recall"}),
		event("ws-a", events.TypeMemoryShown, "s1", map[string]any{"entries": []string{"m-1"}, "mode": "recall"}),
		event("ws-a", events.TypeMemoryShown, "", map[string]any{"entries": []string{"m-3"}, "session": "s2"}),
		event("ws-a", events.TypeMemoryShown, "", map[string]any{"entries": []string{"m-4"}}), // no session: nothing
		event("ws-a", events.TypeMemoryShown, "s1", map[string]any{"entries": "not a list"}),
	}
	require.NoError(t, projector.New(s).Fold(context.Background(), evs))
	rows := func(db *sql.DB) string {
		t.Helper()
		var out []string
		r, err := db.Query(`SELECT session, stream, entry_id, count, last_seq, last_time FROM shown ORDER BY 1, 2, 3`)
		require.NoError(t, err)
		defer r.Close()
		for r.Next() {
			var a, b, c, e string
			var n, seq int
			require.NoError(t, r.Scan(&a, &b, &c, &n, &seq, &e))
			out = append(out, fmt.Sprintf("%s %s %s %d %d %s", a, b, c, n, seq, e))
		}
		return strings.Join(out, "\n")
	}
	live, err := sql.Open("sqlite", s.Path())
	require.NoError(t, err)
	defer live.Close()
	folded := rows(live)
	want := 3
	require.Equal(t, want, strings.Count(folded, "\n")+1, "folded rows:\n%s\nwant %d", folded, want)

	// An index at version 3 holding the same events, then migrated to 4.
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "old.db"))
	require.NoError(t, err)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	require.NoError(t, err)
	ctx := context.Background()
	if _, err := p.UpTo(ctx, 3); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		_, err := db.Exec(`INSERT INTO events (stream, seq, id, type, time, session, data) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			ev.Stream, ev.Seq, ev.ID, ev.Type, ev.Time, ev.Session, string(ev.Data))
		require.NoError(t, err)
	}
	if _, err := p.UpTo(ctx, 4); err != nil {
		t.Fatal(err)
	}
	got := rows(db)
	assert.Equal(t, folded, got, "backfilled:\n%s\nwant (folded):\n%s", got, folded)
}
