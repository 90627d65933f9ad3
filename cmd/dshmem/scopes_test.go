package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"dshmem/observer"
)

const (
	scopeDirA = "/home/u/alpha"
	scopeDirB = "/home/u/beta"
	scopeTokA = "zorbulon"
	scopeTokB = "quaxifrit"
)

// scopeRoot is a root with two workspaces, each with an entry and a
// conversation carrying its token.
func scopeRoot(t *testing.T, root string) {
	t.Helper()
	for _, w := range []struct{ dir, tok string }{{scopeDirA, scopeTokA}, {scopeDirB, scopeTokB}} {
		code, out, errs := cli(t, "", "--root", root, "remember", "--cwd", w.dir, "the "+w.tok+" service listens on port 7070")
		require.EqualValues(t, 0, code, "remember: %s %s", out, errs)
		lines := `{"id":"` + w.tok + `:1","type":"user/message","time":"2026-08-18T10:00:01Z","session":"s-` + w.tok + `","cwd":"` + w.dir + `","data":{"text":"restart ` + w.tok + ` now"}}` + "\n"
		code, out, errs = cli(t, lines, "--root", root, "ingest")
		require.EqualValues(t, 0, code, "ingest: %s %s", out, errs)
	}
}

func cliScopes(t *testing.T, root string, args ...string) []observer.ScopeInfo {
	t.Helper()
	code, out, errs := cli(t, "", append([]string{"--root", root, "scopes", "list", "--json"}, args...)...)
	require.EqualValues(t, 0, code, "scopes list: exit %d: %s", code, errs)
	var list []observer.ScopeInfo
	require.NoError(t, json.Unmarshal([]byte(out), &list), "scopes list --json: %s", out)
	return list
}

func scopeKeys(list []observer.ScopeInfo) []string {
	var out []string
	for _, s := range list {
		out = append(out, s.Key)
	}
	return out
}

// recalls reports whether `dshmem recall --cwd dir tok` finds tok.
func recalls(t *testing.T, root, dir, tok string) bool {
	t.Helper()
	code, out, errs := cli(t, "", "--root", root, "recall", "--json", "--timeout", "1m", "--cwd", dir, tok)
	require.EqualValues(t, 0, code, "recall: exit %d: %s", code, errs)
	return strings.Contains(out, "port 7070")
}

func TestScopesCommands(t *testing.T) {
	root := t.TempDir()
	scopeRoot(t, root)
	ka, kb := observer.StreamForCwd(scopeDirA), observer.StreamForCwd(scopeDirB)

	t.Run("List", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "scopes", "list")
		require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
		for _, want := range []string{"KEY", "DIRECTORY", "ACTIVE", "LAST ACTIVITY", ka, scopeDirA, kb, scopeDirB} {
			assert.Contains(t, out, want)
		}
		list := cliScopes(t, root)
		require.ElementsMatch(t, []string{ka, kb}, scopeKeys(list))
		for _, s := range list {
			assert.Equal(t, 1, s.Entries["active"], "%+v", s)
			assert.Equal(t, 1, s.Sessions, "%+v", s)
			assert.Positive(t, s.Bytes, "%+v", s)
		}
		code, out, _ = cli(t, "", "--root", root, "scopes", "list", "--archived")
		assert.EqualValues(t, 0, code)
		assert.Contains(t, out, "the recycle bin is empty")
	})
	require.True(t, recalls(t, root, scopeDirA, scopeTokA))

	t.Run("Archive", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "scopes", "archive", scopeDirA+"/sub/dir")
		require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
		assert.Contains(t, out, "archived "+scopeDirA+" ("+ka+")")
		assert.Contains(t, out, "dshmem scopes restore "+ka)
		assert.ElementsMatch(t, []string{kb}, scopeKeys(cliScopes(t, root)))
		bin := cliScopes(t, root, "--archived")
		require.ElementsMatch(t, []string{ka}, scopeKeys(bin))
		assert.True(t, bin[0].Archived)
		assert.Equal(t, scopeDirA, bin[0].Dir)
		assert.False(t, recalls(t, root, scopeDirA, scopeTokA), "an archived scope is recalled")
		assert.True(t, recalls(t, root, scopeDirB, scopeTokB))
		_, err := os.Stat(filepath.Join(root, "archived", ka, "memory_summary.md"))
		assert.NoError(t, err)

		code, _, errs = cli(t, "", "--root", root, "scopes", "archive", ka)
		assert.EqualValues(t, 1, code)
		assert.Contains(t, errs, "already archived")
		code, _, errs = cli(t, "", "--root", root, "scopes", "archive", "global")
		assert.EqualValues(t, 1, code)
		assert.Contains(t, errs, "global scope cannot be archived")
		code, _, errs = cli(t, "", "--root", root, "scopes", "archive", "/no/such/workspace")
		assert.EqualValues(t, 1, code)
		assert.Contains(t, errs, "no such scope: /no/such/workspace")
		assert.Contains(t, errs, "dshmem scopes list")
	})

	t.Run("Stats", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "stats")
		require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
		assert.Contains(t, out, scopeDirA+" (archived)")
		assert.Contains(t, out, scopeDirB)
		// The conversation is of 2026-08-18 and no backup was ever made.
		assert.Contains(t, out, "maintenance\n  backup due: no backup recorded, and memory goes back to 2026-08-18")
		code, out, _ = cli(t, "", "--root", root, "stats", "--json")
		require.EqualValues(t, 0, code)
		var st rootStats
		require.NoError(t, json.Unmarshal([]byte(out), &st))
		got := map[string]streamStats{}
		for _, s := range st.Streams {
			got[s.Stream] = s
		}
		assert.Equal(t, scopeDirA, got[ka].Dir)
		assert.True(t, got[ka].Archived)
		assert.Equal(t, scopeDirB, got[kb].Dir)
		assert.False(t, got[kb].Archived)
		assert.Contains(t, strings.Join(st.Maintenance, "\n"), "backup due")
	})

	t.Run("Restore", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "scopes", "restore", "--json", ka)
		require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
		var info observer.ScopeInfo
		require.NoError(t, json.Unmarshal([]byte(out), &info), "%s", out)
		assert.False(t, info.Archived)
		assert.Equal(t, ka, info.Key)
		assert.True(t, recalls(t, root, scopeDirA, scopeTokA))
		code, _, errs = cli(t, "", "--root", root, "scopes", "restore", ka)
		assert.EqualValues(t, 1, code)
		assert.Contains(t, errs, "not in the recycle bin")
	})

	t.Run("PurgeRefused", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "scopes", "purge", kb)
		assert.EqualValues(t, 2, code, "no --confirm: exit %d %s %s", code, out, errs)
		assert.Contains(t, errs, "--confirm "+kb)
		code, _, errs = cli(t, "", "--root", root, "scopes", "purge", kb, "--confirm", ka)
		assert.EqualValues(t, 1, code)
		assert.Contains(t, errs, "is not the key")
		code, _, errs = cli(t, "", "--root", root, "scopes", "purge", "global", "--confirm", "global")
		assert.EqualValues(t, 1, code)
		assert.Contains(t, errs, "global scope cannot be archived or purged")
		assert.ElementsMatch(t, []string{ka, kb}, scopeKeys(cliScopes(t, root)), "a refused purge removed a scope")
	})

	t.Run("Purge", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "scopes", "purge", "--json", kb, "--confirm", kb)
		require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
		var rep observer.PurgeReport
		require.NoError(t, json.Unmarshal([]byte(out), &rep), "%s", out)
		assert.Equal(t, kb, rep.Key)
		assert.Equal(t, 2, rep.Events)
		assert.Contains(t, rep.Files, "scopes/"+kb+"/memory_summary.md")
		assert.Positive(t, rep.Bytes)
		assert.ElementsMatch(t, []string{ka, observer.GlobalStream}, scopeKeys(cliScopes(t, root)), "the purge record makes the global stream")
		assert.False(t, recalls(t, root, scopeDirB, scopeTokB))
		code, out, errs = cli(t, "", "--root", root, "replay", "--verify")
		assert.EqualValues(t, 0, code, "replay --verify after a purge: %s %s", out, errs)
	})

	t.Run("Show", func(t *testing.T) {
		es := cliEntries(t, root, "--cwd", scopeDirA)
		require.Len(t, es, 1)
		id := es[0]["id"].(string)
		code, out, errs := cli(t, "", "--root", root, "show", id)
		require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
		for _, want := range []string{id, "scope       " + scopeDirA + " (" + ka + ")", "status      active", "versions (1)", "v1", "add", "provenance (1)", "memory/remember", "the " + scopeTokA + " service"} {
			assert.Contains(t, out, want)
		}
		code, out, errs = cli(t, "", "--root", root, "show", "--json", id)
		require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
		var d observer.EntryDetail
		require.NoError(t, json.Unmarshal([]byte(out), &d), "%s", out)
		assert.Equal(t, id, d.Entry.ID)
		require.Len(t, d.Versions, 1)
		require.Len(t, d.Provenance, 1)
		assert.True(t, d.Provenance[0].Found)
		assert.Equal(t, "memory/remember", d.Provenance[0].Type)
		assert.Contains(t, d.Provenance[0].Text, scopeTokA)
		code, _, errs = cli(t, "", "--root", root, "show", "m-0123456789abcdef")
		assert.EqualValues(t, 1, code)
		assert.Contains(t, errs, "no entry m-0123456789abcdef")
	})

	t.Run("UsageMistakes", func(t *testing.T) {
		for _, args := range [][]string{{"scopes"}, {"scopes", "frob"}, {"scopes", "archive"}, {"scopes", "archive", "a", "b"}, {"scopes", "list", "extra"}} {
			code, out, errs := cli(t, "", append([]string{"--root", root}, args...)...)
			assert.EqualValues(t, 2, code, "%v: exit %d %s %s", args, code, out, errs)
			assert.Contains(t, errs, "dshmem scopes --help", "%v", args)
		}
	})
}

// TestScopesForwardedToServer: with 'dshmem serve' holding the root,
// archive, restore and purge go to it, and list reads beside it.
func TestScopesForwardedToServer(t *testing.T) {
	root := t.TempDir()
	scopeRoot(t, root)
	ka, kb := observer.StreamForCwd(scopeDirA), observer.StreamForCwd(scopeDirB)
	startInProcess(t, root)

	code, out, errs := cli(t, "", "--root", root, "scopes", "archive", scopeDirA)
	require.EqualValues(t, 0, code, "exit %d: %s %s", code, out, errs)
	assert.Contains(t, errs, "sent to the server holding the root")
	assert.Contains(t, out, "archived "+scopeDirA)
	assert.ElementsMatch(t, []string{ka}, scopeKeys(cliScopes(t, root, "--archived")))

	code, _, errs = cli(t, "", "--root", root, "scopes", "archive", ka)
	assert.EqualValues(t, 1, code)
	assert.Contains(t, errs, "already archived", "the server's refusal is told as without a server")

	code, out, errs = cli(t, "", "--root", root, "scopes", "restore", "--json", ka)
	require.EqualValues(t, 0, code, "exit %d: %s %s", code, out, errs)
	var info observer.ScopeInfo
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	assert.False(t, info.Archived)

	code, _, errs = cli(t, "", "--root", root, "scopes", "purge", kb, "--confirm", "nope")
	assert.EqualValues(t, 1, code)
	assert.Contains(t, errs, "is not the key")

	code, out, errs = cli(t, "", "--root", root, "scopes", "purge", kb, "--confirm", kb)
	require.EqualValues(t, 0, code, "exit %d: %s %s", code, out, errs)
	assert.Contains(t, out, "purged "+kb+": 2 events")
	assert.NotContains(t, scopeKeys(cliScopes(t, root)), kb)
}
