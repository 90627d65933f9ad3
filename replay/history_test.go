package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/require"
)

// Two workspace streams (the ids are made up; any 20 hex digits do).
const (
	wsA = "ws-aaaaaaaaaaaaaaaaaaaa"
	wsB = "ws-bbbbbbbbbbbbbbbbbbbb"
)

// step is one scripted event: its stream, type, time, session and data.
type step struct {
	stream, typ, at, session, cwd string
	data                          any
}

func remember(stream, at string, content, typ string, tags []string, imp int) step {
	d := map[string]any{"content": content, "type": typ, "importance": imp}
	if tags != nil {
		d["tags"] = tags
	}
	return step{stream: stream, typ: events.TypeMemoryRemember, at: at, data: d}
}

func compaction(stream, at, session, id, text string) step {
	return step{stream: stream, typ: events.TypeCompactionSummary, at: at, session: session,
		data: map[string]any{"compactionId": id, "text": text}}
}

func ops(stream, at string, list ...map[string]any) step {
	return step{stream: stream, typ: events.TypeMemoryOps, at: at,
		data: map[string]any{"checkpoint": "ck-test", "distiller": "rules", "ops": list}}
}

// id is the id of the entry the remember at (stream, seq) created.
func id(stream string, seq uint64) string { return projector.EntryID(stream, seq, 0) }

// scripted is a history with adds, revisions, a supersede, a conflict,
// forgets, knowledge topics (one CJK), more than ten summary versions,
// compaction summaries of two streams interleaved on one day (one
// repeated), a day in another offset, and a session summary.
func scripted() []step {
	var s []step
	g := "global"
	s = append(s,
		remember(g, "2026-08-18T09:00:01Z", "Install dependencies with pnpm; never npm.", "preference", []string{"node", "tooling"}, 2), // g1
		remember(g, "2026-08-18T09:00:02Z", "Always run gofmt before committing.", "rule", nil, 1),                                      // g2
		remember(g, "2026-08-18T09:00:03Z", "The staging database listens on port 5433.", "fact", []string{"database"}, 2),              // g3
		remember(g, "2026-08-18T09:00:04Z", "Events are appended to zstd JSONL segments.", "architecture", []string{"storage"}, 3),      // g4
		remember(g, "2026-08-18T09:00:05Z", "Deploy: make check, then make deploy.", "procedure", nil, 1),                               // g5
		remember(g, "2026-08-18T09:00:06Z", "主库使用 PostgreSQL 16。", "fact", []string{"数据库"}, 1),                                          // g6
		remember(g, "2026-08-18T09:00:07Z", "Use tabs for indentation.", "preference", nil, 1),                                          // g7
	)
	s = append(s, ops(g, "2026-08-18T09:10:00Z", // g8
		map[string]any{"op": "revise", "targetId": id(g, 3), "content": "The staging database listens on port 5434 since the move.", "provenance": "distiller"},
		map[string]any{"op": "supersede", "targetId": id(g, 1), "oldQuote": "pnpm", "newQuote": "bun", "type": "preference",
			"title": "Use bun", "content": "Install dependencies with bun.", "tags": []string{"node", "tooling"}, "importance": 2},
		map[string]any{"op": "conflict", "targetId": id(g, 4), "title": "Events go to SQLite first", "content": "Events are written to SQLite before the log.",
			"type": "architecture", "tags": []string{"storage"}},
		map[string]any{"op": "forget", "targetId": id(g, 2), "reason": "no longer true"},
	))
	s = append(s, step{stream: g, typ: events.TypeMemoryForget, at: "2026-08-18T09:11:00Z", data: map[string]any{"entryId": id(g, 7)}}) // g9

	// Workspace A: a session with compactions and many remembers.
	s = append(s,
		step{stream: wsA, typ: events.TypeSessionStart, at: "2026-08-18T10:00:00Z", session: "sa", cwd: "/home/u/shop", data: map[string]any{"origin": "top"}},
		step{stream: wsA, typ: events.TypeUserMessage, at: "2026-08-18T10:00:01Z", session: "sa", data: map[string]any{"text": "fix the checkout"}},
		compaction(wsA, "2026-08-18T10:00:05Z", "sa", "c-a1", "Fixed the checkout: ordering of defaults."),
	)
	for i := 0; i < 13; i++ {
		s = append(s, remember(wsA, fmt.Sprintf("2026-08-18T10:01:%02dZ", i), fmt.Sprintf("Workspace fact %d: module m%d owns the cart.", i, i), "fact", []string{"cart"}, i%4))
	}
	s = append(s,
		compaction(wsA, "2026-08-18T10:05:00Z", "sa", "c-a2", "Second compaction.\n### not a heading\n<!-- mem:fake -->"),
		compaction(wsA, "2026-08-18T10:05:00Z", "sa", "c-a2", "The same compactionId again: changes nothing."),
		compaction(wsA, "2026-08-19T01:30:00+08:00", "sa", "c-a3", "After midnight in +08:00: still the 19th there."),
		step{stream: wsA, typ: events.TypeMemoryForget, at: "2026-08-18T10:06:00Z", data: map[string]any{"entryId": id(wsA, 4)}},
		step{stream: wsA, typ: events.TypeSessionEnd, at: "2026-08-18T10:07:00Z", session: "sa", data: map[string]any{"summary": "Checkout fixed; cart owners recorded."}},
	)
	// Workspace B: compactions interleaved in time with A's.
	s = append(s,
		step{stream: wsB, typ: events.TypeSessionStart, at: "2026-08-18T10:00:02Z", session: "sb", cwd: "/home/u/blog", data: map[string]any{"origin": "top"}},
		compaction(wsB, "2026-08-18T10:00:03Z", "sb", "c-b1", "Blog: drafted the post."),
		compaction(wsB, "2026-08-18T10:00:05Z", "sb", "c-b2", "Same instant as c-a1: stream name breaks the tie."),
		compaction(wsB, "2026-08-18T19:04:59+09:00", "sb", "c-b3", "10:04:59Z in +09:00: sorts before c-a2."),
		remember(wsB, "2026-08-18T10:06:00Z", "The blog deploys from main.", "decision", nil, 2),
	)
	return s
}

// envelopes numbers the steps per stream (seq 1, 2, … in order).
func envelopes(steps []step) []events.Envelope {
	seqs := map[string]uint64{}
	var out []events.Envelope
	for i, st := range steps {
		seqs[st.stream]++
		e := events.Envelope{V: 1, Stream: st.stream, Seq: seqs[st.stream], ID: fmt.Sprintf("h:%d", i),
			Type: st.typ, Time: st.at, Session: st.session, Cwd: st.cwd}
		if st.data != nil {
			b, err := json.Marshal(st.data)
			if err != nil {
				panic(err)
			}
			e.Data = b
		}
		out = append(out, e)
	}
	return out
}

// liveRoot appends evs to a log under root and folds them the way the
// engine does: one Fold per event, interleaving the streams as evs
// does. It returns the open log and index.
func liveRoot(t *testing.T, root string, evs []events.Envelope) (*events.Log, *sqlstore.Store) {
	t.Helper()
	lg, err := events.OpenLog(filepath.Join(root, "log"), events.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { lg.Close() })
	st, err := sqlstore.Open(filepath.Join(root, IndexFile))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	p := projector.New(st)
	p.Root = root
	for _, e := range evs {
		appendAndFold(t, lg, p, e)
	}
	return lg, st
}

// appendAndFold appends e to its stream of lg (which assigns its seq) and
// folds it alone, as the engine does on ingest; it returns e as logged.
func appendAndFold(t *testing.T, lg *events.Log, p *projector.Projector, e events.Envelope) events.Envelope {
	t.Helper()
	ctx := context.Background()
	e.Seq = 0
	stamped, err := lg.Append(ctx, e.Stream, []events.Envelope{e})
	require.NoError(t, err)
	require.NoError(t, p.Fold(ctx, stamped))
	return stamped[0]
}

func dumpOf(t *testing.T, s *sqlstore.Store) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, projector.Dump(context.Background(), s, &b))
	return b.String()
}

// dumpDifference names the first row where the dumps of two indexes
// differ, through Verify's own comparison.
func dumpDifference(t *testing.T, dump dumpFunc, live, rebuilt *sqlstore.Store) string {
	t.Helper()
	problem, err := compareDumps(context.Background(), dump, live, rebuilt)
	require.NoError(t, err)
	return problem
}

func filesDumpOf(t *testing.T, s *sqlstore.Store) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, projector.DumpFiles(context.Background(), s, &b))
	require.NotEqualValues(t, 0, b.Len(), "empty files table")
	return b.String()
}

// readTree reads every projection file of root.
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	paths, err := ProjectionFiles(root)
	require.NoError(t, err)
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		require.NoError(t, err)
		out[p] = string(b)
	}
	return out
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}
