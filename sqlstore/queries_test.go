package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The reads the engine (observer) runs, on an index folded from a small
// log: two workspaces, a session with a checkpoint, entries in every
// status.

const (
	qWS  = "ws-00000000000000000001"
	qWS2 = "ws-00000000000000000002"
)

// queryFixture folds the log the query tests read.
func queryFixture(t *testing.T) (*sqlstore.Store, []events.Envelope) {
	t.Helper()
	s, err := sqlstore.Open(filepath.Join(t.TempDir(), "index.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	seq := map[string]uint64{}
	at := 0
	ev := func(stream, typ, session, id string, data any) events.Envelope {
		seq[stream]++
		at++
		if id == "" {
			id = fmt.Sprintf("t:%s:%d", stream, seq[stream])
		}
		e := events.Envelope{V: 1, Stream: stream, Seq: seq[stream], ID: id, Type: typ, Session: session,
			Time: fmt.Sprintf("2026-08-18T10:%02d:00Z", at)}
		if data != nil {
			e.Data, _ = json.Marshal(data)
		}
		return e
	}
	evs := []events.Envelope{
		ev(qWS, events.TypeScopeRegister, "", "", map[string]any{"dir": "/home/u/proj"}),
		ev(qWS, events.TypeSessionStart, "s1", "dsh:s1:0", map[string]any{"origin": "top"}),
		ev(qWS, events.TypeUserMessage, "s1", "dsh:s1:1", map[string]any{"text": "we deploy with helm"}),
		ev(qWS, events.TypeUserMessage, "s1", "dsh:s1:2", map[string]any{"text": "<memory>shown</memory>", "injected": true}),
		ev(qWS, events.TypeAssistantMessage, "s1", "dsh:s1:3", map[string]any{"text": "noted"}),
		ev(qWS, events.TypeMemoryRemember, "", "r1", map[string]any{"content": "deploys use helm", "tags": []string{"ops"}}), // seq 6
		ev(qWS, events.TypeMemoryRemember, "", "r2", map[string]any{"content": "staging is on friday", "type": "decision"}),  // seq 7
		ev(qWS, events.TypeMemoryOps, "s1", "ops1", map[string]any{"checkpoint": "ck-0000000000000001", "session": "s1", "from": 1, "to": 5,
			"ops": []map[string]any{{"op": "add", "title": "Helm", "content": "helm charts live in deploy/"}}}), // seq 8
		ev(qWS, events.TypeMemoryForget, "", "f1", map[string]any{"entryId": projector.EntryID(qWS, 7, 0), "reason": "moved"}),
		ev(qWS, events.TypeUserMessage, "s1", "dsh:s1:4", map[string]any{"text": "and tests run in CI"}),
		ev(qWS2, events.TypeUserMessage, "s2", "dsh:s2:1", map[string]any{"text": "other workspace"}),
		ev(qWS2, events.TypeMaintenanceBackup, "", "", map[string]any{"path": "/backups/1"}),
		ev("global", events.TypeMemoryRemember, "", "g1", map[string]any{"content": "always run gofmt", "type": "rule"}),
	}
	require.NoError(t, projector.New(s).Fold(context.Background(), evs))
	return s, evs
}

func TestEntryQueries(t *testing.T) {
	s, _ := queryFixture(t)
	ctx := context.Background()
	helm, staging, ops := projector.EntryID(qWS, 6, 0), projector.EntryID(qWS, 7, 0), projector.EntryID(qWS, 8, 0)
	rule := projector.EntryID("global", 1, 0)
	ids := func(es []sqlstore.Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	t.Run("Entries", func(t *testing.T) {
		for _, tc := range []struct {
			f    sqlstore.EntryFilter
			want []string
		}{
			{sqlstore.EntryFilter{}, []string{rule, helm, staging, ops}},
			{sqlstore.EntryFilter{Scopes: []string{qWS}}, []string{helm, staging, ops}},
			{sqlstore.EntryFilter{Statuses: []string{"forgotten"}}, []string{staging}},
			{sqlstore.EntryFilter{Scopes: []string{qWS2}}, nil},
		} {
			got, err := s.Entries(ctx, tc.f)
			require.NoError(t, err)
			assert.True(t, slices.Equal(ids(got), tc.want), "%+v: got %v, want %v", tc.f, ids(got), tc.want)
		}
	})
	t.Run("Entry", func(t *testing.T) {
		e, ok, err := s.Entry(ctx, helm)
		require.NoError(t, err, "got %v, %v", ok, err)
		require.True(t, ok, "got %v, %v", ok, err)
		assert.False(t, e.Scope != qWS || e.Content != "deploys use helm" || !slices.Equal(e.Tags, []string{"ops"}) || e.Status != "active" ||
			e.Version != 1 || e.CreatedSeq != 6 || e.UpdatedSeq != 6 || !strings.Contains(string(e.Provenance), `"r1"`), "got %+v", e)
		if _, ok, err := s.Entry(ctx, "m-0000000000000000"); ok || err != nil {
			t.Errorf("unknown id: got %v, %v", ok, err)
		}
	})
	t.Run("EntryHistory", func(t *testing.T) {
		vs, err := s.EntryHistory(ctx, staging)
		require.NoError(t, err)
		var got []string
		for _, v := range vs {
			got = append(got, fmt.Sprintf("v%d %s %s %s seq %d %s", v.Version, v.Op, v.Status, v.EventType, v.Seq, v.Reason))
		}
		want := []string{"v1 add active memory/remember seq 7 ", "v2 forget forgotten memory/forget seq 9 moved"}
		assert.True(t, slices.Equal(got, want), "got %q, want %q", got, want)
		vs, err = s.EntryHistory(ctx, ops)
		assert.False(t, err != nil || len(vs) != 1 || vs[0].Checkpoint != "ck-0000000000000001" || vs[0].EventID != "ops1", "ops entry: got %+v, %v; want its checkpoint", vs, err)
		if vs, err := s.EntryHistory(ctx, "m-0000000000000000"); err != nil || vs != nil {
			t.Errorf("unknown id: got %v, %v", vs, err)
		}
	})
	t.Run("EntryAddedBy", func(t *testing.T) {
		e, ok, err := s.EntryAddedBy(ctx, "ops1")
		assert.False(t, err != nil || !ok || e.ID != ops || e.Title != "Helm", "got %+v %v %v, want %s", e, ok, err, ops)
		if _, ok, err := s.EntryAddedBy(ctx, "f1"); ok || err != nil {
			t.Errorf("a forget adds nothing: got %v, %v", ok, err)
		}
	})
	t.Run("ReachableEntryIDs", func(t *testing.T) {
		got, err := s.ReachableEntryIDs(ctx, qWS)
		want := []string{helm, ops}
		slices.Sort(want)
		assert.False(t, err != nil || !slices.Equal(got, want), "got %v, %v; want %v (the forgotten one left out)", got, err, want)
	})
	t.Run("MatchEntries", func(t *testing.T) {
		got, err := s.MatchEntries(ctx, `body : "friday"`)
		assert.False(t, err != nil || !slices.Equal(got, []string{staging}), "got %v, %v", got, err)
		if _, err := s.MatchEntries(ctx, `nocolumn : "x"`); err == nil {
			t.Error("a bad expression: got no error")
		}
	})
}

func TestEventQueries(t *testing.T) {
	s, evs := queryFixture(t)
	ctx := context.Background()
	t.Run("Events", func(t *testing.T) {
		all, err := s.Events(ctx, sqlstore.EventFilter{})
		require.NoError(t, err, "got %d events, %v; want %d", len(all), err, len(evs))
		require.Len(t, all, len(evs), "got %d events, %v; want %d", len(all), err, len(evs))
		assert.False(t, all[0].Stream != "global" || string(all[0].Data) != string(evs[len(evs)-1].Data), "first: got %+v, want the global event first (by stream, seq)", all[0])
		for _, tc := range []struct {
			f    sqlstore.EventFilter
			want int
		}{
			{sqlstore.EventFilter{Stream: qWS2}, 2},
			{sqlstore.EventFilter{Type: events.TypeUserMessage}, 4},
			{sqlstore.EventFilter{Session: "s1"}, 6},
			{sqlstore.EventFilter{ID: "dsh:s1:2"}, 1},
			{sqlstore.EventFilter{IDPrefix: "dsh:s1:"}, 5},
			{sqlstore.EventFilter{IDPrefix: "dsh:", Type: events.TypeUserMessage, Stream: qWS}, 3},
			{sqlstore.EventFilter{IDPrefix: "dsh:s1:%"}, 0}, // a prefix, not a pattern
		} {
			got, err := s.Events(ctx, tc.f)
			assert.False(t, err != nil || len(got) != tc.want, "%+v: got %d events, %v; want %d", tc.f, len(got), err, tc.want)
		}
		got, _ := s.Events(ctx, sqlstore.EventFilter{ID: "dsh:s1:2"})
		var d struct{ Injected bool }
		assert.False(t, len(got) != 1 || json.Unmarshal(got[0].Data, &d) != nil || !d.Injected || got[0].Seq != 4 || got[0].Session != "s1", "got %+v", got)
	})
	t.Run("EventSeq", func(t *testing.T) {
		seq, ok, err := s.EventSeq(ctx, qWS, "r2")
		assert.False(t, err != nil || !ok || seq != 7, "got %d %v %v, want 7", seq, ok, err)
		if _, ok, err := s.EventSeq(ctx, qWS2, "r2"); ok || err != nil {
			t.Errorf("another stream: got %v, %v", ok, err)
		}
	})
}

func TestSessionQueries(t *testing.T) {
	s, evs := queryFixture(t)
	ctx := context.Background()
	t.Run("SessionsWithTurns", func(t *testing.T) {
		got, err := s.SessionsWithTurns(ctx, "", "")
		require.NoError(t, err, "got %+v, %v", got, err)
		require.Len(t, got, 2, "got %+v, %v", got, err)
		p := got[0]
		assert.False(t, p.Session != "s1" || p.Stream != qWS || p.Cwd != "" || p.Origin != "top" || p.FirstSeq != 2 || p.LastSeq != 10, "got %+v", p)
		if got, err := s.SessionsWithTurns(ctx, qWS2, ""); err != nil || len(got) != 1 || got[0].Session != "s2" {
			t.Errorf("by stream: got %+v, %v", got, err)
		}
		if got, err := s.SessionsWithTurns(ctx, "", "nope"); err != nil || len(got) != 0 {
			t.Errorf("unknown session: got %+v, %v", got, err)
		}
	})
	t.Run("CheckpointClaims", func(t *testing.T) {
		got, err := s.CheckpointClaims(ctx, "", "")
		assert.False(t, err != nil || !slices.Equal(got, []sqlstore.Claim{{Stream: qWS, Session: "s1", To: 5}}), "got %+v, %v", got, err)
		if got, err := s.CheckpointClaims(ctx, qWS, "s2"); err != nil || len(got) != 0 {
			t.Errorf("other session: got %+v, %v", got, err)
		}
	})
	t.Run("ScanSessionEvents", func(t *testing.T) {
		var seqs []uint64
		err := s.ScanSessionEvents(ctx, qWS, "s1", 3, 9, func(ev sqlstore.Event) error {
			seqs = append(seqs, ev.Seq)
			return nil
		})
		assert.False(t, err != nil || !slices.Equal(seqs, []uint64{3, 4, 5, 8}), "got %v, %v; want the session's events in 3..9", seqs, err)
		stop := errors.New("stop")
		n := 0
		err = s.ScanSessionEvents(ctx, qWS, "s1", 1, 100, func(sqlstore.Event) error { n++; return stop })
		assert.False(t, !errors.Is(err, stop) || n != 1, "got %v after %d events, want fn's error after 1", err, n)
	})
	t.Run("SessionLastTimes", func(t *testing.T) {
		got, err := s.SessionLastTimes(ctx)
		slices.Sort(got)
		assert.False(t, err != nil || !slices.Equal(got, []string{evs[9].Time, evs[10].Time}), "got %v, %v", got, err)
	})
	t.Run("Sessions", func(t *testing.T) {
		got, err := s.Sessions(ctx)
		assert.False(t, err != nil || len(got) != 2 || got[0].Session != "s1" || got[0].UserTurns != 2 || got[0].Events != 6 || got[0].StartedAt != evs[1].Time, "got %+v, %v", got, err)
	})
	t.Run("Scope", func(t *testing.T) {
		d, err := s.Reader().Scope(ctx, qWS)
		assert.False(t, err != nil || d.Cwd != "/home/u/proj" || d.Seq != 1 || d.Time != evs[0].Time, "got %+v, %v", d, err)
		if d, err := s.Reader().Scope(ctx, qWS2); err != nil || d != (sqlstore.ScopeDir{}) {
			t.Errorf("no directory recorded: got %+v, %v", d, err)
		}
	})
}

// The record of written files, as the projector keeps it around a write
// and as sync and the tests read it.
func TestFileRecord(t *testing.T) {
	s, _ := queryFixture(t)
	ctx := context.Background()
	require.NoError(t, s.QueueFiles(ctx, []string{"global", "day/2026-08-18", "global"}))
	n, err := s.QueuedFiles(ctx)
	require.NoError(t, err, "got %d queued, %v; want 2", n, err)
	require.EqualValues(t, 2, n, "got %d queued, %v; want 2", n, err)
	q, err := s.Reader().FileQueue(ctx)
	require.NoError(t, err, "got %+v, %v", q, err)
	require.True(t, slices.Equal(q, []sqlstore.QueuedGroup{{Key: "day/2026-08-18", Gen: 1}, {Key: "global", Gen: 2}}), "got %+v, %v", q, err)
	intents := []sqlstore.FileIntent{{Path: "global.md", SHA256: "aa"}, {Path: "knowledge/x.md", SHA256: "bb"}}
	require.NoError(t, s.RecordFileIntents(ctx, intents))
	if rec, intent, err := s.FileHashes(ctx, "global.md"); err != nil || rec != "" || intent != "aa" {
		t.Errorf("before the record: got %q %q %v", rec, intent, err)
	}
	if got, err := s.Reader().FilesUnder(ctx, "knowledge/"); err != nil || !slices.Equal(got, []string{"knowledge/x.md"}) {
		t.Errorf("an intent counts as written: got %v, %v", got, err)
	}
	w := sqlstore.FileWrite{Path: "global.md", SHA256: "aa", Bytes: 3, Stream: "global", Seq: 1, Positions: "{}",
		Time: "2026-08-18T10:00:00Z", KeepText: true, Text: "abc"}
	require.NoError(t, s.RecordFiles(ctx, []sqlstore.FileWrite{w}, q[1:]))
	files, err := s.Reader().Files(ctx)
	want := sqlstore.FileRow{Path: "global.md", SHA256: "aa", Bytes: 3, Stream: "global", Seq: 1, Positions: "{}", Time: w.Time, Text: "abc"}
	assert.False(t, err != nil || len(files) != 1 || files[0] != want, "got %+v, %v; want %+v", files, err, want)
	if left, err := s.FileIntents(ctx); err != nil || !slices.Equal(left, intents[1:]) {
		t.Errorf("intents left: got %+v, %v", left, err)
	}
	if q, err := s.Reader().FileQueue(ctx); err != nil || len(q) != 1 || q[0].Key != "day/2026-08-18" {
		t.Errorf("queue left: got %+v, %v", q, err)
	}
	require.NoError(t, s.RecordFiles(ctx, []sqlstore.FileWrite{{Path: "global.md", Remove: true}}, nil))
	if paths, err := s.FilePaths(ctx); err != nil || len(paths) != 0 {
		t.Errorf("removed: got %v, %v", paths, err)
	}
}

// What restore reads of a live index, and the cursor it sets on its own.
func TestRestoreQueries(t *testing.T) {
	s, _ := queryFixture(t)
	ctx := context.Background()
	seq := map[string]uint64{}
	ev := func(stream, typ, when string, data any) events.Envelope {
		seq[stream]++
		b, _ := json.Marshal(data)
		return events.Envelope{V: 1, Stream: stream, Seq: 20 + seq[stream], ID: fmt.Sprintf("b:%s:%d", stream, seq[stream]),
			Type: typ, Session: "s9", Time: when, Data: b}
	}
	p := projector.New(s)
	p.Sparse = true
	require.NoError(t, p.Fold(ctx, []events.Envelope{
		ev(qWS, events.TypeCompactionSummary, "2026-08-19T09:00:00Z", map[string]any{"compactionId": "c1", "text": "one"}),
		ev(qWS, events.TypeUserMessage, "2026-08-19T09:01:00Z", map[string]any{"text": "between"}),
		ev(qWS, events.TypeSessionEnd, "2026-08-19T09:02:00+08:00", map[string]any{"summary": "done"}),
		ev(qWS2, events.TypeCompactionSummary, "2026-08-19T23:00:00Z", map[string]any{"compactionId": "c2", "text": "two"}),
		ev(qWS2, events.TypeCompactionSummary, "2026-08-20T00:00:00Z", map[string]any{"compactionId": "c3", "text": "next day"}),
	}))
	got, err := s.BlockSpans(ctx, "2026-08-19")
	want := []sqlstore.BlockSpan{{Stream: qWS, From: 21, To: 23}, {Stream: qWS2, From: 21, To: 21}}
	assert.False(t, err != nil || !slices.Equal(got, want), "got %+v, %v; want %+v", got, err, want)
	if days, err := s.BlockDays(ctx); err != nil || !slices.Equal(days, []string{"2026-08-19", "2026-08-20"}) {
		t.Errorf("days: got %v, %v", days, err)
	}
	require.NoError(t, s.SetCursor(ctx, qWS, 99))
	if c, err := s.Cursor(qWS); err != nil || c != 99 {
		t.Errorf("got cursor %d, %v; want 99", c, err)
	}
}

func TestCheckpointAll(t *testing.T) {
	s, _ := queryFixture(t)
	ctx := context.Background()
	require.NoError(t, s.CheckpointAll(ctx))
	st, err := s.Stats(ctx)
	assert.False(t, err != nil || st.WALBytes != 0 || st.Events == 0, "got %+v, %v; want an empty WAL and the events in the file", st, err)
}
