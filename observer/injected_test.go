package observer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/observer/distill"
	"dshmem/sqlstore/recall"
)

// injectedSession writes testdata/dsh-injected/session.jsonl, with its
// placeholders filled in, under dir as a host session tree and returns the
// tree's root.
func injectedSession(t *testing.T, dir, session, cwd string) string {
	t.Helper()
	b, err := os.ReadFile("../testdata/dsh-injected/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.NewReplacer("{{sessionId}}", session, "{{cwd}}", cwd).Replace(string(b)))
	p := filepath.Join(dir, "--proj--", session, "session.jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
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
	mkdirs(t, base, "proj/.git", "proj/deploy/chart")
	proj := base + "/proj"
	eng := ckOpen(t, t.TempDir())
	if _, err := eng.ImportDSH(ctx, injectedSession(t, t.TempDir(), "session-inj", proj+"/deploy/chart"), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	stream := StreamForCwd(proj)
	if got := eng.Log().Streams(); len(got) != 1 || got[0] != stream {
		t.Fatalf("streams %v, want the repository's %s", got, stream)
	}

	ps, err := eng.Pending(ctx)
	if err != nil || len(ps) != 1 || ps[0].UserTurns != 2 {
		t.Fatalf("pending %+v, %v; want one session with 2 user turns (the typed ones)", ps, err)
	}
	fake := &ckFakeDistiller{}
	ckCheckpoint(t, eng, CheckpointRequest{Force: true, Distiller: fake})
	if len(fake.reqs) != 1 {
		t.Fatalf("distiller called %d times, want 1", len(fake.reqs))
	}
	for _, m := range fake.reqs[0].Messages {
		if m.Injected || strings.Contains(m.Text, "Current runtime context") || strings.Contains(m.Text, "port 5433") ||
			strings.Contains(m.Text, "m-0123456789abcdef") {
			t.Errorf("the distiller was given injected text: %+v", m)
		}
	}

	// A fresh root, distilled by the rules distiller, which learns any
	// "remember that …" a user types.
	eng = ckOpen(t, t.TempDir())
	if _, err := eng.ImportDSH(ctx, injectedSession(t, t.TempDir(), "session-inj", proj+"/deploy/chart"), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	ckCheckpoint(t, eng, CheckpointRequest{Force: true})
	es, err := eng.Entries(ctx, EntryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Scope != stream || !strings.Contains(es[0].Content, "releases are tagged from the main branch") {
		t.Fatalf("entries %+v, want only the user's statement, in %s", es, stream)
	}
	for _, bad := range []string{"helm", "make check", "5433"} {
		if strings.Contains(es[0].Title+es[0].Content, bad) {
			t.Errorf("entry %s holds injected text %q", es[0].ID, bad)
		}
	}
	if p, _ := eng.Pending(ctx); len(p) != 0 {
		t.Errorf("pending after the checkpoint: %+v", p)
	}

	search := func(q string, include bool) []recall.Item {
		t.Helper()
		res, err := eng.Recall(ctx, recall.Query{Text: q, Kind: recall.KindEpisodic, Scopes: []string{eng.Scope(proj + "/deploy").Stream},
			Limit: 20, Bytes: -1, NoFloor: true, IncludeInjected: include})
		if err != nil {
			t.Fatal(err)
		}
		return res.Items
	}
	t.Run("SearchLeavesInjectedOut", func(t *testing.T) {
		for _, q := range []string{"helm", "5433", "make check", "runtime context"} {
			for _, it := range search(q, false) {
				if it.Injected {
					t.Errorf("search %q found injected %s: %q", q, it.EventID, it.Text)
				}
			}
		}
		if got := search("5433", false); len(got) != 0 {
			t.Errorf("search 5433: got %d hits, want none (only injected text holds it)", len(got))
		}
	})
	t.Run("IncludeInjected", func(t *testing.T) {
		got := search("helm", true)
		var injected, memTool int
		for _, it := range got {
			if it.Injected {
				injected++
				if !strings.Contains(strings.Join(it.Flags, ","), recall.FlagInjected) {
					t.Errorf("%s injected but not flagged: %v", it.EventID, it.Flags)
				}
				if it.Type == "tool/result" {
					memTool++
				}
			}
		}
		if injected < 3 || memTool != 1 {
			t.Errorf("got %d injected hits (%d memory_search results), want both snapshots and the memory_search result", injected, memTool)
		}
	})
	t.Run("RulesStillLearnFromUnmarkedCopy", func(t *testing.T) {
		// The control: the rules do learn "remember that …" typed by the
		// user, so the fixture's injected text would be learnt if it were
		// not marked.
		msgs := []distill.Message{{EventID: "x", Seq: 1, Role: distill.RoleUser, Text: "Remember that we deploy with helm."}}
		res, err := distill.NewRules().Distill(ctx, distill.Request{Stream: stream, Messages: msgs})
		if err != nil || len(res.Operations) != 1 {
			t.Fatalf("got %+v, %v; want the rules to learn the statement", res, err)
		}
	})
}
