package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dshmem/observer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cli runs dshmem in-process and returns its exit code and output.
func cli(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

const goodLines = `{"id":"t:1","type":"session/start","time":"2026-08-18T10:00:00Z","session":"s1","cwd":"/home/u/proj","data":{"origin":"top"}}
{"id":"t:2","type":"user/message","time":"2026-08-18T10:00:01Z","session":"s1","data":{"text":"我们的记忆注入逻辑需要修复 in parseConfig"}}
{"id":"t:3","type":"assistant/message","time":"2026-08-18T10:00:02+08:00","session":"s1","data":{"text":"Looking at internal/config/load.go now."}}
`

func TestIngest(t *testing.T) {
	root := t.TempDir()
	t.Run("OK", func(t *testing.T) {
		code, out, errs := cli(t, goodLines, "--root", root, "ingest")
		require.EqualValues(t, 0, code, "exit %d, stderr %s", code, errs)
		got, want := strings.TrimSpace(out), `{"appended":3,"duplicates":0,"rejected":0}`
		require.Equal(t, want, got, "got %s, want %s", got, want)
	})
	t.Run("Duplicates", func(t *testing.T) {
		code, out, _ := cli(t, goodLines, "--root", root, "ingest", "--json", "-")
		require.EqualValues(t, 0, code, "exit %d, out %s", code, out)
		require.EqualValues(t, `{"appended":0,"duplicates":3,"rejected":0}`, strings.TrimSpace(out), "exit %d, out %s", code, out)
	})
	t.Run("RejectedLinesNamed", func(t *testing.T) {
		in := `{"id":"t:4","type":"user/message","time":"2026-08-18T10:00:03Z","session":"s1","data":{"text":"fine"}}

{"id":"t:5","type":"user/message","time":"yesterday","data":{"text":"bad time"}}
not json at all
`
		code, out, errs := cli(t, in, "--root", root, "ingest")
		require.EqualValues(t, 1, code, "exit %d, want 1", code)
		require.EqualValues(t, `{"appended":1,"duplicates":0,"rejected":2}`, strings.TrimSpace(out), "got %s", out)
		for _, want := range []string{"line 3", `"time"`, "line 4"} {
			assert.Contains(t, errs, want, "stderr lacks %q:\n%s", want, errs)
		}
	})
	t.Run("FromFile", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "in.jsonl")
		os.WriteFile(f, []byte(`{"id":"t:6","type":"user/message","time":"2026-08-18T10:00:04Z","data":{"text":"global one"}}`), 0o600)
		code, out, errs := cli(t, "", "--root", root, "ingest", f)
		require.EqualValues(t, 0, code, "exit %d out %s err %s", code, out, errs)
		require.Contains(t, out, `"appended":1`, "exit %d out %s err %s", code, out, errs)
	})
	t.Run("Directory", func(t *testing.T) {
		d := t.TempDir()
		code, out, errs := cli(t, "", "--root", root, "ingest", d)
		require.EqualValues(t, 1, code, "exit %d, stderr %s", code, errs)
		require.Empty(t, out)
		assert.Equal(t, "dshmem ingest: "+d+" is a directory: pass a JSONL file, or - (or nothing) for standard input; 'dshmem import dsh DIR' reads a tree of DSH session logs\n", errs)
	})
	t.Run("MissingFile", func(t *testing.T) {
		code, _, errs := cli(t, "", "--root", root, "ingest", "/nonexistent/x.jsonl")
		require.EqualValues(t, 1, code, "exit %d, stderr %s", code, errs)
		require.Contains(t, errs, "/nonexistent/x.jsonl", "exit %d, stderr %s", code, errs)
	})
}

func TestSearchJSON(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := cli(t, goodLines, "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	for _, q := range []string{"记忆", "config"} {
		code, out, errs := cli(t, "", "--root", root, "search", "--json", q)
		require.EqualValues(t, 0, code, "search %q: exit %d: %s", q, code, errs)
		var hits []map[string]any
		if err := json.Unmarshal([]byte(out), &hits); err != nil {
			t.Fatalf("search %q: %v\n%s", q, err, out)
		}
		require.NotEqualValues(t, 0, len(hits), "search %q: no hits", q)
		for _, k := range []string{"eventId", "stream", "seq", "type", "session", "time", "text", "score"} {
			_, ok := hits[0][k]
			assert.True(t, ok, "search %q: hit lacks %q: %v", q, k, hits[0])
		}
		if hits[0]["eventId"] != "t:2" && q == "记忆" {
			t.Errorf("search 记忆: got %v, want t:2", hits[0]["eventId"])
		}
	}
	t.Run("StreamFilter", func(t *testing.T) {
		code, out, _ := cli(t, "", "--root", root, "search", "--json", "--cwd", "/elsewhere", "记忆")
		require.EqualValues(t, 0, code, "exit %d, got %s, want []", code, out)
		require.EqualValues(t, "[]", strings.TrimSpace(out), "exit %d, got %s, want []", code, out)
		code, out, _ = cli(t, "", "--root", root, "search", "--json", "--cwd", "/home/u/proj/", "记忆")
		require.EqualValues(t, 0, code, "exit %d, got %s", code, out)
		require.Contains(t, out, "t:2", "exit %d, got %s", code, out)
	})
	t.Run("BadStream", func(t *testing.T) {
		code, _, errs := cli(t, "", "--root", root, "search", "--stream", "nope", "x")
		require.EqualValues(t, 2, code, "exit %d, %s", code, errs)
		require.Contains(t, errs, "nope", "exit %d, %s", code, errs)
	})
}

func TestSQLReadOnly(t *testing.T) {
	root := t.TempDir()
	cli(t, goodLines, "--root", root, "ingest")
	code, out, errs := cli(t, "", "--root", root, "sql", "--json", "SELECT count(*) AS n FROM events")
	require.EqualValues(t, 0, code, "exit %d out %s err %s", code, out, errs)
	require.Contains(t, out, `"n": 3`, "exit %d out %s err %s", code, out, errs)
	for _, q := range []string{"DELETE FROM events", "INSERT INTO cursors(stream, seq) VALUES ('x', 1)", "DROP TABLE events", "UPDATE events SET type='x'"} {
		code, _, errs := cli(t, "", "--root", root, "sql", q)
		assert.False(t, code == 0 || !strings.Contains(errs, "read-only"), "%s: exit %d, stderr %q; want a read-only refusal", q, code, errs)
	}
	code, out, _ = cli(t, "", "--root", root, "sql", "SELECT count(*) AS n FROM events")
	require.EqualValues(t, 0, code, "events changed after refused writes: %s", out)
	require.Contains(t, out, "3", "events changed after refused writes: %s", out)
}

func TestSecondWriterNamesHolder(t *testing.T) {
	root := t.TempDir()
	release, err := observer.LockRoot(root)
	require.NoError(t, err)
	defer release()
	code, _, errs := cli(t, goodLines, "--root", root, "ingest")
	require.EqualValues(t, 1, code, "exit %d, stderr %q: want the holder's pid", code, errs)
	require.Contains(t, errs, "process "+strconv.Itoa(os.Getpid()), "exit %d, stderr %q: want the holder's pid", code, errs)
}

func TestVerifyAndStats(t *testing.T) {
	root := t.TempDir()
	cli(t, goodLines, "--root", root, "ingest")
	code, out, errs := cli(t, "", "--root", root, "verify")
	require.EqualValues(t, 0, code, "exit %d out %s err %s", code, out, errs)
	require.EqualValues(t, "ok: 1 stream(s), 1 segment(s), 3 event(s) verified", strings.TrimSpace(out), "exit %d out %s err %s", code, out, errs)
	code, out, _ = cli(t, "", "--root", root, "stats", "--json")
	var st rootStats
	require.EqualValues(t, 0, code, "exit %d stats %s", code, out)
	require.Nil(t, json.Unmarshal([]byte(out), &st), "exit %d stats %s", code, out)
	require.EqualValues(t, 3, st.Events, "exit %d stats %s", code, out)
	require.Len(t, st.Streams, 1, "exit %d stats %s", code, out)
	require.NotEqualValues(t, 0, st.LogBytes, "exit %d stats %s", code, out)
	// Flip a byte in the middle of the segment: verify names it.
	segs, _ := filepath.Glob(filepath.Join(root, "log", "*", "*.jsonl.zst"))
	b, _ := os.ReadFile(segs[0])
	b[len(b)-10] ^= 0xff
	os.WriteFile(segs[0], b, 0o600)
	code, out, _ = cli(t, "", "--root", root, "verify")
	require.EqualValues(t, 1, code, "exit %d out %s: want the segment and offset", code, out)
	require.Contains(t, out, filepath.Base(segs[0]), "exit %d out %s: want the segment and offset", code, out)
	require.Contains(t, out, "offset", "exit %d out %s: want the segment and offset", code, out)
}

func TestHelpAndUsage(t *testing.T) {
	for name := range commands {
		code, out, _ := cli(t, "", name, "--help")
		assert.False(t, code != 0 || !strings.Contains(out, "usage: dshmem"), "%s --help: exit %d, %q", name, code, out)
	}
	code, _, errs := cli(t, "", "serach", "x")
	assert.False(t, code != 2 || !strings.Contains(errs, `"search"`), "typo: exit %d, %q", code, errs)
	code, _, errs = cli(t, "", "search", "--limit", "zero", "x")
	assert.False(t, code != 2 || !strings.Contains(errs, "--help"), "bad flag: exit %d, %q", code, errs)
}

// TestDemo runs 'dshmem demo' as README's first command does: it exits
// 0, ends by saying the temporary root is gone, and it is (the steps
// themselves are observer/demo's tests).
func TestDemo(t *testing.T) {
	code, out, errs := cli(t, "", "demo")
	require.EqualValues(t, 0, code, "exit %d: %s\n%s", code, errs, out)
	first, _, _ := strings.Cut(out, "\n")
	root, ok := strings.CutPrefix(first, "dshmem demo — a fresh root at ")
	require.True(t, ok, "first line %q does not name the root", first)
	assert.True(t, strings.HasSuffix(out, "Done; the temporary root was removed (run 'dshmem demo --keep' to explore it).\n"), "demo output does not end by saying the root was removed:\n%s", out)
	_, err := os.Stat(root)
	assert.ErrorIs(t, err, fs.ErrNotExist, "stat %s after the demo: %v, want it gone", root, err)
}

// TestMissingRootIsNotCreated: commands that read or change existing
// memory say the root is missing instead of creating an empty one.
func TestMissingRootIsNotCreated(t *testing.T) {
	root := filepath.Join(t.TempDir(), "nowhere")
	for _, args := range [][]string{
		{"sync"}, {"forget", "m-0000000000000000"}, {"checkpoint", "--force"},
		{"replay", "--verify"}, {"restore", "global.md"}, {"search", "x"}, {"recall", "x"},
		{"entries"}, {"history", "m-0000000000000000"}, {"stats"}, {"sql", "SELECT 1"},
		{"recall", "--session", "s1", "x"}, {"verify"}, {"repair"},
		{"migrate", "status"}, {"migrate", "down-to", "0"},
		{"scopes", "list"}, {"scopes", "archive", "ws-00000000000000000000"}, {"scopes", "restore", "/x"},
		{"scopes", "purge", "ws-00000000000000000000", "--confirm", "ws-00000000000000000000"}, {"show", "m-0000000000000000"},
	} {
		code, _, errs := cli(t, "", append([]string{"--root", root}, args...)...)
		assert.False(t, code != 1 || !strings.Contains(errs, "no memory root"), "%v: exit %d, stderr %q; want exit 1 naming the missing root", args, code, errs)
		_, err := os.Stat(root)
		require.Error(t, err, "%v created the root %s", args, root)
	}
}

// TestUsageMistakes: each mistake on the command line names what is
// wrong and what to do, with exit 2.
func TestUsageMistakes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"CommandFlagBeforeCommand", []string{"--json", "stats"}, []string{"-json", "only --root goes before COMMAND", "dshmem --help"}},
		{"ArgumentToNoArgCommand", []string{"stats", "extra"}, []string{"dshmem stats: takes no arguments, got \"extra\"", "dshmem stats --help"}},
		{"NoQuery", []string{"search", "--limit", "3"}, []string{"dshmem search: needs a QUERY"}},
		{"NoEntryID", []string{"history"}, []string{"needs exactly one entry ID", "dshmem entries"}},
		{"TwoEntryIDs", []string{"forget", "m-1", "m-2"}, []string{"needs exactly one entry ID"}},
		{"NoText", []string{"remember", "--global"}, []string{"needs the TEXT to remember"}},
		{"RootAfterCommand", []string{"recall", "--root", "/elsewhere", "nginx"}, []string{"-root", "--root goes before the command: dshmem --root DIR recall"}},
		{"SubcommandUsage", []string{"scopes", "purge", "ws-00000000000000000000"}, []string{"--confirm", "usage: dshmem [--root DIR] scopes purge [--json] KEY --confirm KEY\n"}},
		{"SubcommandUsageBackupVerify", []string{"backup", "verify"}, []string{"usage: dshmem [--root DIR] backup verify [--json] DIR\n"}},
		{"KeepWithoutVerify", []string{"replay", "--keep"}, []string{"--keep goes with --verify"}},
		{"RestoreAtFarFuture", []string{"restore", "global.md", "--at", "9999-12-31T00:00:00Z"}, []string{"outside the years 1970–2199", "leave --at out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(t, "", append([]string{"--root", t.TempDir()}, tc.args...)...)
			require.EqualValues(t, 2, code, "exit %d, stdout %q; want exit 2 and nothing on stdout", code, out)
			require.EqualValues(t, "", out, "exit %d, stdout %q; want exit 2 and nothing on stdout", code, out)
			for _, w := range tc.want {
				assert.Contains(t, errs, w, "stderr lacks %q:\n%s", w, errs)
			}
		})
	}
}

// TestHelpCommandEqualsFlag: "dshmem help CMD" prints what "CMD --help"
// prints, options included.
func TestHelpCommandEqualsFlag(t *testing.T) {
	for _, name := range []string{"recall", "remember", "verify", "bench"} {
		_, viaFlag, _ := cli(t, "", name, "--help")
		code, viaHelp, _ := cli(t, "", "help", name)
		assert.False(t, code != 0 || viaHelp != viaFlag, "help %s: exit %d, got\n%s\nwant\n%s", name, code, viaHelp, viaFlag)
	}
	_, out, _ := cli(t, "", "remember", "--help")
	assert.False(t, !strings.Contains(out, "importance 0–3 (default 1)") || strings.Contains(out, "default -1"), "remember --help: --importance default not shown as 1:\n%s", out)
}

func TestMigrateStatus(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := cli(t, goodLines, "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := cli(t, "", "--root", root, "migrate", "status")
	require.EqualValues(t, 0, code, "exit %d, stdout %q, stderr %q; want one line per migration, e.g. \"1  applied  00001_events.sql\"", code, out, errs)
	require.Contains(t, out, "applied  00001_events.sql", "exit %d, stdout %q, stderr %q; want one line per migration, e.g. \"1  applied  00001_events.sql\"", code, out, errs)
	require.NotContains(t, out, "{", "exit %d, stdout %q, stderr %q; want one line per migration, e.g. \"1  applied  00001_events.sql\"", code, out, errs)
}

func TestIngestMissingFileSaysWhatToPass(t *testing.T) {
	code, _, errs := cli(t, "", "--root", t.TempDir(), "ingest", "/nonexistent/x.jsonl")
	require.EqualValues(t, 1, code, "exit %d, stderr %q", code, errs)
	require.Contains(t, errs, "no such file", "exit %d, stderr %q", code, errs)
	require.Contains(t, errs, "standard input", "exit %d, stderr %q", code, errs)
	require.NotContains(t, errs, "open input", "exit %d, stderr %q", code, errs)
}

// TestErrorNamesCommandOnce: an error of a package named like the
// command is not prefixed twice ("dshmem backup: backup: …").
func TestErrorNamesCommandOnce(t *testing.T) {
	code, _, errs := cli(t, "", "--root", t.TempDir(), "backup", "verify", filepath.Join(t.TempDir(), "none"))
	require.Equal(t, 1, code, errs)
	assert.Contains(t, errs, "dshmem backup: no manifest:")
	assert.NotContains(t, errs, "backup: backup:")
}
