package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/observer"
	"dshmem/observer/distill"
	"dshmem/observer/importer"
	"dshmem/observer/internal/enginetest"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// injectedSession writes testdata/dsh-injected/session.jsonl, with its
// placeholders filled in, under dir as a host session tree and returns the
// tree's root.
func injectedSession(t *testing.T, dir, session, cwd string) string {
	t.Helper()
	b, err := os.ReadFile("../../testdata/dsh-injected/session.jsonl")
	require.NoError(t, err)
	b = []byte(strings.NewReplacer("{{sessionId}}", session, "{{cwd}}", cwd).Replace(string(b)))
	p := filepath.Join(dir, "--proj--", session, "session.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return dir
}

// A host session whose memory-like text is injected — runtime-context
// snapshots holding dshmem's section, a plugin's recall, a memory_search
// result — started in a subdirectory of a repository: the events reach
// the repository's scope, pending work counts only what the user typed,
// the distiller never sees injected text, only the user's statement
// becomes an entry, and search leaves the injected text out unless asked.
func TestInjectedNeverDistilledNorSearched(t *testing.T) {
	ctx := context.Background()
	base := filepath.ToSlash(t.TempDir())
	enginetest.Mkdirs(t, base, "proj/.git", "proj/deploy/chart")
	proj := base + "/proj"
	eng := enginetest.Open(t, t.TempDir())
	if _, err := importer.ImportDSH(ctx, eng, injectedSession(t, t.TempDir(), "session-inj", proj+"/deploy/chart"), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	stream := observer.StreamForCwd(proj)
	if got := eng.Log().Streams(); len(got) != 1 || got[0] != stream {
		t.Fatalf("streams %v, want the repository's %s", got, stream)
	}

	ps, err := Scan(ctx, eng)
	require.NoError(t, err, "pending %+v, %v; want one session with 2 user turns (the typed ones)", ps, err)
	require.Len(t, ps, 1, "pending %+v, %v; want one session with 2 user turns (the typed ones)", ps, err)
	require.EqualValues(t, 2, ps[0].UserTurns, "pending %+v, %v; want one session with 2 user turns (the typed ones)", ps, err)
	fake := &ckFakeDistiller{}
	ckCheckpoint(t, eng, Request{Force: true, Distiller: fake})
	require.Len(t, fake.reqs, 1, "distiller called %d times, want 1", len(fake.reqs))
	for _, m := range fake.reqs[0].Messages {
		assert.False(t, m.Injected || strings.Contains(m.Text, "Current runtime context") || strings.Contains(m.Text, "port 5433") ||
			strings.Contains(m.Text, "m-0123456789abcdef"), "the distiller was given injected text: %+v", m)
	}

	// A fresh root, distilled by the rules distiller, which learns any
	// "remember that …" a user types.
	eng = enginetest.Open(t, t.TempDir())
	if _, err := importer.ImportDSH(ctx, eng, injectedSession(t, t.TempDir(), "session-inj", proj+"/deploy/chart"), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	ckCheckpoint(t, eng, Request{Force: true})
	es, err := eng.Entries(ctx, observer.EntryFilter{})
	require.NoError(t, err)
	require.Len(t, es, 1, "entries %+v, want only the user's statement, in %s", es, stream)
	require.Equal(t, stream, es[0].Scope, "entries %+v, want only the user's statement, in %s", es, stream)
	require.Contains(t, es[0].Content, "releases are tagged from the main branch", "entries %+v, want only the user's statement, in %s", es, stream)
	for _, bad := range []string{"helm", "make check", "5433"} {
		assert.NotContains(t, es[0].Title+es[0].Content, bad, "entry %s holds injected text %q", es[0].ID, bad)
	}
	p, _ := Scan(ctx, eng)
	assert.Len(t, p, 0, "pending after the checkpoint: %+v", p)

	search := func(q string, include bool) []recall.Item {
		t.Helper()
		res, err := eng.Recall(ctx, recall.Query{Text: q, Kind: recall.KindEpisodic, Scopes: []string{eng.Scope(proj + "/deploy").Stream},
			Limit: 20, Bytes: -1, NoFloor: true, IncludeInjected: include})
		require.NoError(t, err)
		return res.Items
	}
	t.Run("SearchLeavesInjectedOut", func(t *testing.T) {
		for _, q := range []string{"helm", "5433", "make check", "runtime context"} {
			for _, it := range search(q, false) {
				assert.False(t, it.Injected, "search %q found injected %s: %q", q, it.EventID, it.Text)
			}
		}
		got := search("5433", false)
		assert.Len(t, got, 0, "search 5433: got %d hits, want none (only injected text holds it)", len(got))
	})
	t.Run("IncludeInjected", func(t *testing.T) {
		got := search("helm", true)
		var injected, memTool int
		for _, it := range got {
			if it.Injected {
				injected++
				assert.Contains(t, strings.Join(it.Flags, ","), recall.FlagInjected, "%s injected but not flagged: %v", it.EventID, it.Flags)
				if it.Type == "tool/result" {
					memTool++
				}
			}
		}
		assert.False(t, injected < 3 || memTool != 1, "got %d injected hits (%d memory_search results), want both snapshots and the memory_search result", injected, memTool)
	})
	t.Run("RulesStillLearnFromUnmarkedCopy", func(t *testing.T) {
		// The control: the rules do learn "remember that …" typed by the
		// user, so the fixture's injected text would be learnt if it were
		// not marked.
		msgs := []distill.Message{{EventID: "x", Seq: 1, Role: distill.RoleUser, Text: "Remember that we deploy with helm."}}
		res, err := distill.NewRules().Distill(ctx, distill.Request{Stream: stream, Messages: msgs})
		require.NoError(t, err, "got %+v, %v; want the rules to learn the statement", res, err)
		require.Len(t, res.Operations, 1, "got %+v, %v; want the rules to learn the statement", res, err)
	})
}
