package handedit

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/projector"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncRoot is a root with global entries in global.md and two knowledge
// files, a workspace with an entry, and a day of compactions.
func syncRoot(t *testing.T) (*observer.Engine, string) {
	t.Helper()
	root := t.TempDir()
	eng, err := observer.Open(context.Background(), root, observer.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { eng.Close() })
	in := `{"id":"r1","type":"memory/remember","time":"2026-08-18T09:00:01Z","data":{"content":"Install dependencies with pnpm.","title":"Use pnpm","type":"preference","importance":2}}
{"id":"r2","type":"memory/remember","time":"2026-08-18T09:00:02Z","data":{"content":"Always run gofmt.","type":"rule"}}
{"id":"r3","type":"memory/remember","time":"2026-08-18T09:00:03Z","data":{"content":"Staging DB is on port 5433.","type":"fact","tags":["database"]}}
{"id":"r4","type":"memory/remember","time":"2026-08-18T09:00:04Z","data":{"content":"Tabs, not spaces.","type":"preference"}}
{"id":"w1","type":"memory/remember","time":"2026-08-18T09:00:05Z","cwd":"/home/u/p","data":{"content":"The cart is in module m1.","type":"fact"}}
{"id":"c1","type":"compaction/summary","time":"2026-08-18T10:00:00Z","session":"s","cwd":"/home/u/p","data":{"compactionId":"c1","text":"one"}}
{"id":"c2","type":"compaction/summary","time":"2026-08-18T10:01:00Z","session":"s","cwd":"/home/u/p","data":{"compactionId":"c2","text":"two"}}
{"id":"c3","type":"compaction/summary","time":"2026-08-18T10:02:00Z","session":"s","cwd":"/home/u/p","data":{"compactionId":"c3","text":"three"}}
`
	res, _, err := eng.IngestReader(context.Background(), strings.NewReader(in))
	require.NoError(t, err, "ingest: %+v %v", res, err)
	require.EqualValues(t, 8, res.Appended, "ingest: %+v %v", res, err)
	require.NoError(t, eng.WriteFiles(context.Background()))
	return eng, root
}

func readFile(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(b)
}

func writeFile(t *testing.T, root, rel, s string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), []byte(s), 0o644))
}

// statusOf lists the entries keep selects as "status title | content",
// by scope and then in the order they were created.
func statusOf(t *testing.T, eng *observer.Engine, keep func(observer.Entry) bool) []string {
	t.Helper()
	es, err := eng.Entries(context.Background(), observer.EntryFilter{})
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		if keep(e) {
			out = append(out, e.Status+" "+e.Title+" | "+e.Content)
		}
	}
	return out
}

// fileEdits returns the data of the file/edit events of the index, by
// stream and seq.
func fileEdits(t *testing.T, eng *observer.Engine) []payload.FileEdit {
	t.Helper()
	evs, err := eng.Store().Events(context.Background(), sqlstore.EventFilter{Type: events.TypeFileEdit})
	require.NoError(t, err)
	var out []payload.FileEdit
	for _, ev := range evs {
		var fe payload.FileEdit
		require.NoError(t, payload.Unmarshal(ev.Data, &fe), "file/edit %s", ev.ID)
		out = append(out, fe)
	}
	return out
}

func TestSync(t *testing.T) {
	ctx := context.Background()
	t.Run("Clean", func(t *testing.T) {
		eng, _ := syncRoot(t)
		rep, err := Sync(ctx, eng)
		require.NoError(t, err, "got %+v, %v; want nothing to do", rep, err)
		require.Len(t, rep.Files, 0, "got %+v, %v; want nothing to do", rep, err)
	})

	t.Run("Captured", func(t *testing.T) {
		eng, root := syncRoot(t)
		g := readFile(t, root, "global.md")
		// Revise the pnpm block, remove the tabs block, add a new one.
		g = strings.Replace(g, "Install dependencies with pnpm.", "Install dependencies with pnpm, even in CI.", 1)
		i := strings.Index(g, "<!-- mem:"+projector.EntryID("global", 4, 0))
		j := strings.Index(g[i+1:], "<!-- mem:")
		if j < 0 {
			g = g[:i]
		} else {
			g = g[:i] + g[i+1+j:]
		}
		g += "\n### Write commit messages in English\n\nAlways, even for tiny fixes.\n"
		writeFile(t, root, "global.md", g)
		held := []string{}
		eng.Projector().Held = func(p string) { held = append(held, p) }

		rep, err := Sync(ctx, eng)
		require.NoError(t, err)
		require.Len(t, rep.Files, 1, "got %+v, want global.md captured with 3 ops", rep.Files)
		require.Equal(t, Captured, rep.Files[0].Action, "got %+v, want global.md captured with 3 ops", rep.Files)
		require.EqualValues(t, 3, rep.Files[0].Ops, "got %+v, want global.md captured with 3 ops", rep.Files)
		got := strings.Join(statusOf(t, eng, func(e observer.Entry) bool { return e.Scope == observer.GlobalStream }), "\n")
		for _, want := range []string{
			"active Use pnpm | Install dependencies with pnpm, even in CI.",
			"forgotten Tabs, not spaces. | Tabs, not spaces.",
			"active Write commit messages in English | Always, even for tiny fixes.",
		} {
			assert.Contains(t, got, want, "entries lack %q:\n%s", want, got)
		}
		after := readFile(t, root, "global.md")
		assert.False(t, !strings.Contains(after, "even in CI") || strings.Contains(after, "Tabs, not spaces") || !strings.Contains(after, "## Rules"), "global.md was not rendered again from the edit:\n%s", after)
		n := 0
		for _, fe := range fileEdits(t, eng) {
			if fe.Path == "global.md" {
				n++
			}
		}
		assert.EqualValues(t, 1, n, "got %d file/edit events, want 1", n)
		if rep, err := Sync(ctx, eng); err != nil || len(rep.Files) != 0 {
			t.Errorf("second sync: got %+v, %v; want nothing to do", rep, err)
		}
		// The files of the captured ops' fold are written in the
		// background: if that write came before Rewrite it held the
		// edited file, which Rewrite then replaced. Nothing else is held.
		if h := strings.Join(held, ","); h != "" && h != "global.md" {
			t.Errorf("got held %v, want [] or [global.md] (by the fold of the captured ops)", held)
		}
	})

	t.Run("InterruptedThenRunAgain", func(t *testing.T) {
		// A sync that logged the edit and stopped before it rendered the
		// file again: the edited bytes are still on disk and the files
		// row still names what dshmem wrote before.
		eng, root := syncRoot(t)
		base := readFile(t, root, "global.md")
		edited := strings.Replace(base, "Always run gofmt.", "Always run gofmt and go vet.", 1)
		writeFile(t, root, "global.md", edited)
		if _, err := Sync(ctx, eng); err != nil {
			t.Fatal(err)
		}
		if err := eng.WriteFiles(ctx); err != nil { // what the file writer would do next
			t.Fatal(err)
		}
		writeFile(t, root, "global.md", edited)
		// Put back the files row and text of what dshmem wrote before.
		rows, err := eng.Store().Reader().Files(ctx)
		require.NoError(t, err)
		i := slices.IndexFunc(rows, func(r sqlstore.FileRow) bool { return r.Path == "global.md" })
		require.NotEqual(t, -1, i, "no files row for global.md: %+v", rows)
		r := rows[i]
		require.NoError(t, eng.Store().RecordFiles(ctx, []sqlstore.FileWrite{{Path: r.Path, SHA256: projector.SHA256([]byte(base)),
			Bytes: r.Bytes, Stream: r.Stream, Seq: r.Seq, Positions: r.Positions, Time: r.Time, KeepText: true, Text: base}}, nil))
		rep, err := Sync(ctx, eng)
		require.NoError(t, err, "got %+v, %v; want global.md captured again", rep.Files, err)
		require.Len(t, rep.Files, 1, "got %+v, %v; want global.md captured again", rep.Files, err)
		require.Equal(t, Captured, rep.Files[0].Action, "got %+v, %v; want global.md captured again", rep.Files, err)
		ops, err := eng.Store().Events(ctx, sqlstore.EventFilter{Type: events.TypeMemoryOps})
		require.NoError(t, err)
		n := len(fileEdits(t, eng)) + len(ops)
		assert.Equal(t, 2, n, "got %d file/edit and memory/ops events, want 2: the second sync logged again", n)
		got := readFile(t, root, "global.md")
		assert.Contains(t, got, "gofmt and go vet", "global.md lost the edit:\n%s", got)
		if rep, err := Sync(ctx, eng); err != nil || len(rep.Files) != 0 {
			t.Errorf("third sync: got %+v, %v; want nothing to do (the file rendered again and recorded)", rep, err)
		}
	})

	t.Run("HeldUntilCaptured", func(t *testing.T) {
		eng, root := syncRoot(t)
		edited := strings.Replace(readFile(t, root, "knowledge/database.md"), "port 5433", "port 5434", 1)
		writeFile(t, root, "knowledge/database.md", edited)
		var held []string
		eng.Projector().Held = func(p string) { held = append(held, p) }
		in := `{"id":"r5","type":"memory/remember","time":"2026-08-18T11:00:00Z","data":{"content":"Replica is on 5435.","type":"fact","tags":["database"]}}`
		_, _, err := eng.IngestReader(ctx, strings.NewReader(in))
		require.NoError(t, err)
		require.NoError(t, eng.WriteFiles(ctx))
		if got := readFile(t, root, "knowledge/database.md"); got != edited || len(held) == 0 {
			t.Fatalf("a hand edit was overwritten before sync (held %v):\n%s", held, got)
		}
		if _, err := Sync(ctx, eng); err != nil {
			t.Fatal(err)
		}
		got := readFile(t, root, "knowledge/database.md")
		assert.False(t, !strings.Contains(got, "port 5434") || !strings.Contains(got, "Replica is on 5435"), "after sync the file lacks the edit or the newer entry:\n%s", got)
		ids := statusOf(t, eng, func(e observer.Entry) bool { return e.Status == payload.StatusForgotten })
		assert.Len(t, ids, 0, "the entry added while the file was held was forgotten: %v", ids)
	})

	t.Run("Damaged", func(t *testing.T) {
		eng, root := syncRoot(t)
		orig := readFile(t, root, "global.md")
		cut := strings.Join(strings.SplitAfter(orig, "\n")[:8], "")
		writeFile(t, root, "global.md", cut)
		rep, err := Sync(ctx, eng)
		require.NoError(t, err)
		require.Len(t, rep.Files, 1, "got %+v, want global.md damaged", rep.Files)
		require.Equal(t, Damaged, rep.Files[0].Action, "got %+v, want global.md damaged", rep.Files)
		require.Contains(t, rep.Files[0].Detail, "more than half", "got %+v, want global.md damaged", rep.Files)
		got := readFile(t, root, "global.md")
		assert.Equal(t, orig, got, "not rendered again:\n%s", got)
		if got := readFile(t, root, "global.md"+DamagedSuffix); got != cut {
			t.Errorf("damaged bytes not kept: %q", got)
		}
		if got := statusOf(t, eng, func(e observer.Entry) bool { return e.Status != payload.StatusActive }); len(got) != 0 {
			t.Errorf("damage changed entries: %v", got)
		}
	})

	t.Run("DamagedRecord", func(t *testing.T) {
		eng, root := syncRoot(t)
		const day = "sessions/2026-08-18.md"
		orig := readFile(t, root, day)
		cut := orig[:strings.Index(orig, "<!-- compaction:c2 -->")]
		writeFile(t, root, day, cut)
		rep, err := Sync(ctx, eng)
		require.NoError(t, err)
		require.Len(t, rep.Files, 1, "got %+v, want %s damaged and saved", rep.Files, day)
		require.Equal(t, Damaged, rep.Files[0].Action, "got %+v, want %s damaged and saved", rep.Files, day)
		require.Equal(t, day+DamagedSuffix, rep.Files[0].Saved, "got %+v, want %s damaged and saved", rep.Files, day)
		got := readFile(t, root, day)
		assert.Equal(t, orig, got, "not rendered again:\n%s", got)
		if got := readFile(t, root, day+DamagedSuffix); got != cut {
			t.Errorf("damaged bytes not kept: %q", got)
		}
	})

	t.Run("ViewsAndRecords", func(t *testing.T) {
		eng, root := syncRoot(t)
		scope := observer.StreamForCwd("/home/u/p")
		sum := projector.SummaryPath(scope)
		origSum := readFile(t, root, sum)
		writeFile(t, root, sum, origSum+"\nmy note\n")
		writeFile(t, root, "index.md", "# mine\n")
		day := readFile(t, root, "sessions/2026-08-18.md")
		writeFile(t, root, "sessions/2026-08-18.md", strings.Replace(day, "two", "TWO", 1))
		os.Remove(filepath.Join(root, "knowledge", "database.md"))
		writeFile(t, root, "knowledge/mine.md", "# mine\n")
		rep, err := Sync(ctx, eng)
		require.NoError(t, err)
		got := map[string]string{}
		for _, f := range rep.Files {
			got[f.Path] = f.Action
		}
		want := map[string]string{sum: NotRead, "index.md": NotRead, "sessions/2026-08-18.md": Record,
			"knowledge/database.md": Missing, "knowledge/mine.md": Foreign}
		for p, a := range want {
			assert.Equal(t, a, got[p], "%s: got %q, want %q", p, got[p], a)
		}
		assert.False(t, readFile(t, root, sum) != origSum || strings.Contains(readFile(t, root, "index.md"), "# mine"), "views were not rendered again")
		assert.Contains(t, readFile(t, root, "sessions/2026-08-18.md"), "TWO", "a record was changed by sync")
		assert.Contains(t, readFile(t, root, "knowledge/database.md"), "5433", "a deleted file was not rendered again")
		n := len(fileEdits(t, eng))
		assert.EqualValues(t, 2, n, "got %d file/edit events, want 2 (the summary and index.md)", n)
	})
}

// TestSyncWritesPayload: a captured edit is logged as payload.FileEdit
// and payload.Ops, as payload.Marshal encodes them, under ids that
// derive from the path and the hashes of the written and the edited
// bytes only (so a sync run again logs nothing twice).
func TestSyncWritesPayload(t *testing.T) {
	ctx := context.Background()
	eng, root := syncRoot(t)
	base := readFile(t, root, "global.md")
	edited := strings.Replace(base, "Always run gofmt.", "Always run gofmt & go vet <pkg>.", 1) +
		"\n### Write commit messages in English\n\nAlways, even for tiny fixes.\n"
	writeFile(t, root, "global.md", edited)
	rep, err := Sync(ctx, eng)
	require.NoError(t, err)
	require.Len(t, rep.Files, 1, "got %+v", rep.Files)
	require.EqualValues(t, 2, rep.Files[0].Ops, "got %+v, want a revise and an add", rep.Files)

	byID := map[string]events.Envelope{}
	require.NoError(t, eng.Log().Scan(observer.GlobalStream, 0, func(ev events.Envelope) error {
		byID[ev.ID] = ev
		return nil
	}))
	baseSum, editedSum := projector.SHA256([]byte(base)), projector.SHA256([]byte(edited))
	id := "sync:global.md:" + baseSum[:12] + ":" + editedSum[:12]

	fe, ok := byID[id]
	require.True(t, ok, "no event %s in the log", id)
	require.Equal(t, events.TypeFileEdit, fe.Type)
	wantEdit := payload.FileEdit{Path: "global.md", Content: edited}
	var gotEdit payload.FileEdit
	require.NoError(t, payload.Unmarshal(fe.Data, &gotEdit))
	assert.Equal(t, wantEdit, gotEdit)
	raw, err := payload.Marshal(wantEdit)
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(fe.Data), "file/edit: got data %.80s…, want payload.Marshal's bytes (path first)", fe.Data)

	oe, ok := byID[id+":ops"]
	require.True(t, ok, "no event %s:ops in the log", id)
	require.Equal(t, events.TypeMemoryOps, oe.Type)
	var ops payload.Ops
	require.NoError(t, payload.Unmarshal(oe.Data, &ops))
	assert.Equal(t, "sync-"+editedSum[:16], ops.Checkpoint)
	assert.Equal(t, payload.ProvenanceHandEdit, ops.Distiller)
	require.Len(t, ops.Ops, 2, "got %+v", ops.Ops)
	assert.Equal(t, payload.OpRevise, ops.Ops[0].Op, "got %+v", ops.Ops[0])
	assert.Equal(t, "Always run gofmt & go vet <pkg>.", ops.Ops[0].Title, "got %+v", ops.Ops[0])
	assert.Equal(t, payload.OpAdd, ops.Ops[1].Op, "got %+v", ops.Ops[1])
	assert.Equal(t, payload.TypeRule, ops.Ops[1].Type, "an untyped block of global.md: got %+v", ops.Ops[1])
	for _, o := range ops.Ops {
		assert.Equal(t, payload.ProvenanceHandEdit, o.Provenance, "got %+v", o)
	}
	raw, err = payload.Marshal(ops)
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(oe.Data), "memory/ops: got data %s, want payload.Marshal's bytes", oe.Data)
}
