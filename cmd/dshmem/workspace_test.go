package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/observer"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wsRepo makes base/proj a repository with subdirectories and returns the
// repository's directory (slashes, as the host reports it).
func wsRepo(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{"proj/.git", "proj/svc/api"} {
		require.NoError(t, os.MkdirAll(filepath.Join(base, filepath.FromSlash(d)), 0o755))
	}
	return filepath.ToSlash(filepath.Join(base, "proj"))
}

func entriesJSON(t *testing.T, root string, args ...string) []observer.Entry {
	t.Helper()
	code, out, errs := cli(t, "", append([]string{"--root", root, "entries", "--json"}, args...)...)
	var es []observer.Entry
	require.EqualValues(t, 0, code, "entries %v: exit %d %s %s", args, code, out, errs)
	require.Nil(t, json.Unmarshal([]byte(out), &es), "entries %v: exit %d %s %s", args, code, out, errs)
	return es
}

// A CLI started in a subdirectory of a project reaches the project's
// memory: remember, entries, recall and search, with --cwd (absolute or
// relative) and with the current directory.
func TestSubdirectoryReachesProjectCLI(t *testing.T) {
	root := t.TempDir()
	proj := wsRepo(t)
	stream := observer.StreamForCwd(proj)
	if code, out, errs := cli(t, "", "--root", root, "remember", "--cwd", proj+"/svc/api", "--type", "decision", "The API speaks gRPC"); code != 0 {
		t.Fatalf("remember: exit %d %s %s", code, out, errs)
	}
	t.Chdir(proj + "/svc")
	if code, out, errs := cli(t, "", "--root", root, "remember", "Deploys go through the staging cluster first"); code != 0 {
		t.Fatalf("remember from the current directory: exit %d %s %s", code, out, errs)
	}
	for _, args := range [][]string{{"--cwd", proj}, {"--cwd", proj + "/svc/api/"}, {"--cwd", "api"}, {"--cwd", "."}} {
		es := entriesJSON(t, root, args...)
		assert.False(t, len(es) != 2 || es[0].Scope != stream || es[1].Scope != stream, "entries %v: got %+v, want both entries of %s", args, es, stream)
	}
	code, out, _ := cli(t, "", "--root", root, "entries")
	assert.False(t, code != 0 || !strings.Contains(out, proj+" ("+stream+")"), "entries: exit %d, want the scope headed by its directory:\n%s", code, out)
	code, out, _ = cli(t, "", "--root", root, "recall", "--timeout", "1m", "--json", "gRPC")
	assert.False(t, code != 0 || !strings.Contains(out, "The API speaks gRPC"), "recall from a subdirectory: exit %d %s", code, out)
	code, out, _ = cli(t, "", "--root", root, "search", "--kind", "semantic", "--cwd", "api", "staging")
	assert.False(t, code != 0 || !strings.Contains(out, "staging cluster"), "search --cwd api: exit %d %s", code, out)
	sj, err := os.ReadFile(filepath.Join(root, "scopes", stream, "scope.json"))
	assert.False(t, err != nil || !strings.Contains(string(sj), `"cwd": "`+proj+`"`), "scope.json: %s, %v; want the repository's directory", sj, err)
	if code, out, errs := cli(t, "", "--root", root, "replay", "--verify"); code != 0 {
		t.Errorf("replay --verify: exit %d %s %s", code, out, errs)
	}

	t.Run("NoMemoryNamesDirectory", func(t *testing.T) {
		other := filepath.ToSlash(t.TempDir())
		code, out, _ := cli(t, "", "--root", root, "entries", "--cwd", other)
		want := "No memory for " + other + " (" + observer.StreamForCwd(other) + ") yet"
		assert.False(t, code != 0 || !strings.Contains(out, want), "entries of a new directory: exit %d %q, want %q", code, out, want)
		code, out, _ = cli(t, "", "--root", root, "search", "--cwd", other, "gRPC")
		assert.False(t, code != 0 || !strings.Contains(out, other+" (") || !strings.Contains(out, "no memory for"), "search of a new directory: exit %d %q", code, out)
	})
}

// After a real-shaped host session whose memory-like text is injected
// (testdata/dsh-injected), started in a subdirectory, `dshmem entries`
// shows only what the user typed, and `dshmem search` finds the injected
// text only with --include-injected.
func TestEntriesNothingFromInjected(t *testing.T) {
	root := t.TempDir()
	proj := wsRepo(t)
	b, err := os.ReadFile("../../testdata/dsh-injected/session.jsonl")
	require.NoError(t, err)
	b = []byte(strings.NewReplacer("{{sessionId}}", "session-cli", "{{cwd}}", proj+"/svc/api").Replace(string(b)))
	hostLog := filepath.Join(t.TempDir(), "--proj--", "session-cli", "session.jsonl")
	os.MkdirAll(filepath.Dir(hostLog), 0o755)
	require.NoError(t, os.WriteFile(hostLog, b, 0o644))
	if code, out, errs := cli(t, "", "--root", root, "import", "dsh", hostLog); code != 0 {
		t.Fatalf("import: exit %d %s %s", code, out, errs)
	}
	if code, out, errs := cli(t, "", "--root", root, "checkpoint", "--force"); code != 0 {
		t.Fatalf("checkpoint: exit %d %s %s", code, out, errs)
	}
	es := entriesJSON(t, root)
	require.Len(t, es, 1, "entries: %+v, want only the user's statement, in the repository's scope", es)
	require.Equal(t, observer.StreamForCwd(proj), es[0].Scope, "entries: %+v, want only the user's statement, in the repository's scope", es)
	require.Contains(t, es[0].Content, "releases are tagged from the main branch", "entries: %+v, want only the user's statement, in the repository's scope", es)
	for _, bad := range []string{"helm", "make check", "5433"} {
		assert.NotContains(t, es[0].Content, bad, "entry holds injected text %q", bad)
	}

	search := func(args ...string) []recall.Item {
		t.Helper()
		code, out, errs := cli(t, "", append([]string{"--root", root, "search", "--json"}, args...)...)
		var items []recall.Item
		require.EqualValues(t, 0, code, "search %v: exit %d %s %s", args, code, out, errs)
		require.Nil(t, json.Unmarshal([]byte(out), &items), "search %v: exit %d %s %s", args, code, out, errs)
		return items
	}
	if got := search("5433"); len(got) != 0 {
		t.Errorf("search 5433: got %+v, want nothing (only injected text holds it)", got)
	}
	for _, it := range search("--cwd", proj+"/svc", "helm") {
		assert.False(t, it.Injected, "search helm found injected %s", it.EventID)
	}
	got := search("--include-injected", "5433")
	assert.False(t, len(got) != 1 || !got[0].Injected || !strings.Contains(strings.Join(got[0].Flags, ","), "injected"), "search --include-injected 5433: got %+v, want the plugin's recall, flagged", got)
	code, out, _ := cli(t, "", "--root", root, "search", "5433")
	assert.False(t, code != 0 || !strings.Contains(out, "--include-injected"), "an empty search does not mention --include-injected: %s", out)
	code, out, _ = cli(t, "", "--root", root, "recall", "--timeout", "1m", "--cwd", proj, "--kind", "episodic", "--include-injected", "--json", "5433")
	assert.False(t, code != 0 || !strings.Contains(out, `"injected": true`), "recall --kind episodic --include-injected: exit %d %s", code, out)
	code, out, _ = cli(t, "", "--root", root, "recall", "--timeout", "1m", "--cwd", proj, "--kind", "episodic", "--json", "5433")
	assert.False(t, code != 0 || strings.Contains(out, `"injected": true`), "recall --kind episodic: exit %d %s, want no injected item", code, out)
}
