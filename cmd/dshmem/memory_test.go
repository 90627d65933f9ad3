package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var entryIDRe = regexp.MustCompile(`^m-[0-9a-f]{16}$`)

// cliEntries runs entries --json with extra args and decodes it.
func cliEntries(t *testing.T, root string, args ...string) []map[string]any {
	t.Helper()
	code, out, errs := cli(t, "", append([]string{"--root", root, "entries", "--json"}, args...)...)
	require.EqualValues(t, 0, code, "entries: exit %d: %s", code, errs)
	var es []map[string]any
	if err := json.Unmarshal([]byte(out), &es); err != nil {
		t.Fatalf("entries --json: %v\n%s", err, out)
	}
	return es
}

func TestRememberForgetHistory(t *testing.T) {
	root := t.TempDir()
	code, out, errs := cli(t, "", "--root", root, "remember", "--cwd", "/home/u/proj", "--type", "decision",
		"--tags", "db, infra", "--importance", "2", "Database: PostgreSQL 16")
	id := strings.TrimSpace(out)
	require.EqualValues(t, 0, code, "remember: exit %d, stdout %q, stderr %s", code, out, errs)
	require.True(t, entryIDRe.MatchString(id), "remember: exit %d, stdout %q, stderr %s", code, out, errs)
	es := cliEntries(t, root)
	require.Len(t, es, 1, "entries: got %v", es)
	require.Equal(t, id, es[0]["id"], "entries: got %v", es)
	require.EqualValues(t, "decision", es[0]["type"], "entries: got %v", es)
	require.EqualValues(t, "active", es[0]["status"], "entries: got %v", es)
	require.EqualValues(t, 2.0, es[0]["importance"], "entries: got %v", es)
	require.EqualValues(t, "Database: PostgreSQL 16", es[0]["content"], "entries: got %v", es)
	tags, _ := json.Marshal(es[0]["tags"])
	assert.EqualValues(t, `["db","infra"]`, string(tags), "tags: got %s", tags)
	got := cliEntries(t, root, "--cwd", "/elsewhere")
	assert.Len(t, got, 0, "entries of another workspace: %v", got)

	t.Run("Forget", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "forget", id, "--reason", "moved to CockroachDB")
		require.EqualValues(t, 0, code, "forget: exit %d, %q, %s", code, out, errs)
		require.True(t, strings.HasPrefix(out, id+"\n"), "forget: exit %d, %q, %s", code, out, errs)
		got := cliEntries(t, root, "--status", "active")
		assert.Len(t, got, 0, "active after forget: %v", got)
		if got := cliEntries(t, root, "--status", "forgotten"); len(got) != 1 {
			t.Errorf("forgotten: %v", got)
		}
	})
	t.Run("History", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "history", id)
		require.EqualValues(t, 0, code, "history: exit %d: %s", code, errs)
		for _, want := range []string{"v1 ", "add", "memory/remember", "v2 ", "forget", "forgotten", "reason: moved to CockroachDB"} {
			assert.Contains(t, out, want, "history lacks %q:\n%s", want, out)
		}
		code, out, _ = cli(t, "", "--root", root, "history", "--json", id)
		var vs []map[string]any
		assert.False(t, code != 0 || json.Unmarshal([]byte(out), &vs) != nil || len(vs) != 2 || vs[1]["op"] != "forget" || vs[1]["eventType"] != "memory/forget", "history --json: exit %d, %s", code, out)
	})
	t.Run("ErrAlreadyForgotten", func(t *testing.T) {
		code, _, errs := cli(t, "", "--root", root, "forget", id)
		assert.False(t, code != 1 || !strings.Contains(errs, "already forgotten"), "exit %d, stderr %q", code, errs)
	})
	t.Run("ErrUnknownID", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "forget", "m-0123456789abcdef")
		assert.False(t, code != 1 || out != "" || !strings.Contains(errs, "no entry m-0123456789abcdef") || !strings.Contains(errs, "dshmem entries"), "exit %d, stdout %q, stderr %q", code, out, errs)
		code, _, errs = cli(t, "", "--root", root, "history", "m-0123456789abcdef")
		assert.False(t, code != 1 || !strings.Contains(errs, "no entry m-0123456789abcdef"), "history: exit %d, stderr %q", code, errs)
	})
	t.Run("ErrOnlySecret", func(t *testing.T) {
		code, out, errs := cli(t, "", "--root", root, "remember", "--global", "sk-proj-8fK2mQ9xLr4TzW1vB7nC3dE5gH6jP0sA")
		assert.False(t, code != 1 || out != "" || !strings.Contains(errs, "nothing stored: content is nothing but a credential"), "exit %d, stdout %q, stderr %q", code, out, errs)
	})
	t.Run("ErrBadFlags", func(t *testing.T) {
		for _, args := range [][]string{
			{"remember", "--type", "opinion", "x"},
			{"remember", "--importance", "5", "x"},
			{"remember", "--global", "--cwd", "/p", "x"},
			{"remember"},
			{"forget"},
			{"entries", "--status", "gone"},
			{"checkpoint", "--distiller", "magic"},
		} {
			code, _, errs := cli(t, "", append([]string{"--root", root}, args...)...)
			assert.EqualValues(t, 2, code, "%v: exit %d, want 2: %s", args, code, errs)
		}
	})
}

func TestCheckpointCommand(t *testing.T) {
	root := t.TempDir()
	in := `{"id":"c:1","type":"user/message","time":"2026-08-18T10:00:00Z","session":"s1","cwd":"/home/u/proj","data":{"text":"remember that the staging DB is on port 5433"}}
{"id":"c:2","type":"assistant/message","time":"2026-08-18T10:00:01Z","session":"s1","data":{"text":"Noted."}}
{"id":"c:3","type":"user/message","time":"2026-08-18T10:00:02Z","session":"s1","data":{"text":"api_key=Zx9fLq2wPv7TnR4s is a secret"}}
`
	if code, _, errs := cli(t, in, "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := cli(t, "", "--root", root, "checkpoint", "--force", "--distiller", "rules")
	require.EqualValues(t, 0, code, "checkpoint: exit %d\n%s\n%s", code, out, errs)
	require.Contains(t, out, "s1 (ws-", "checkpoint: exit %d\n%s\n%s", code, out, errs)
	require.Contains(t, out, "1 op committed as ck-", "checkpoint: exit %d\n%s\n%s", code, out, errs)
	require.Contains(t, out, "add ", "checkpoint: exit %d\n%s\n%s", code, out, errs)
	require.Contains(t, out, "The staging DB is on port 5433", "checkpoint: exit %d\n%s\n%s", code, out, errs)
	code, out, _ = cli(t, "", "--root", root, "checkpoint")
	assert.False(t, code != 0 || strings.TrimSpace(out) != "nothing pending", "second checkpoint: exit %d, %q", code, out)
	es := cliEntries(t, root, "--status", "active")
	assert.False(t, len(es) != 1 || es[0]["title"] != "The staging DB is on port 5433", "entries: %v", es)

	t.Run("ErrNoAPIKey", func(t *testing.T) {
		t.Setenv("DEEPSEEK_API_KEY", "")
		t.Setenv("DSHMEM_LLM_API_KEY", "")
		t.Setenv("DSHMEM_DISTILLER", "openai")
		code, _, errs := cli(t, "", "--root", root, "checkpoint", "--force")
		assert.False(t, code != 1 || !strings.Contains(errs, "DEEPSEEK_API_KEY"), "exit %d, stderr %q", code, errs)
	})
}
