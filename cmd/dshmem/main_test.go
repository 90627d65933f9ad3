package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dshmem/observer"
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
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, errs)
		}
		if got, want := strings.TrimSpace(out), `{"appended":3,"duplicates":0,"rejected":0}`; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
	t.Run("Duplicates", func(t *testing.T) {
		code, out, _ := cli(t, goodLines, "--root", root, "ingest", "-")
		if code != 0 || strings.TrimSpace(out) != `{"appended":0,"duplicates":3,"rejected":0}` {
			t.Fatalf("exit %d, out %s", code, out)
		}
	})
	t.Run("RejectedLinesNamed", func(t *testing.T) {
		in := `{"id":"t:4","type":"user/message","time":"2026-08-18T10:00:03Z","session":"s1","data":{"text":"fine"}}

{"id":"t:5","type":"user/message","time":"yesterday","data":{"text":"bad time"}}
not json at all
`
		code, out, errs := cli(t, in, "--root", root, "ingest")
		if code != 1 {
			t.Fatalf("exit %d, want 1", code)
		}
		if strings.TrimSpace(out) != `{"appended":1,"duplicates":0,"rejected":2}` {
			t.Fatalf("got %s", out)
		}
		for _, want := range []string{"line 3", `"time"`, "line 4"} {
			if !strings.Contains(errs, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errs)
			}
		}
	})
	t.Run("FromFile", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "in.jsonl")
		os.WriteFile(f, []byte(`{"id":"t:6","type":"user/message","time":"2026-08-18T10:00:04Z","data":{"text":"global one"}}`), 0o600)
		code, out, errs := cli(t, "", "--root", root, "ingest", f)
		if code != 0 || !strings.Contains(out, `"appended":1`) {
			t.Fatalf("exit %d out %s err %s", code, out, errs)
		}
	})
	t.Run("MissingFile", func(t *testing.T) {
		code, _, errs := cli(t, "", "--root", root, "ingest", "/nonexistent/x.jsonl")
		if code != 1 || !strings.Contains(errs, "/nonexistent/x.jsonl") {
			t.Fatalf("exit %d, stderr %s", code, errs)
		}
	})
}

func TestSearchJSON(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := cli(t, goodLines, "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	for _, q := range []string{"记忆", "config"} {
		code, out, errs := cli(t, "", "--root", root, "search", "--json", q)
		if code != 0 {
			t.Fatalf("search %q: exit %d: %s", q, code, errs)
		}
		var hits []map[string]any
		if err := json.Unmarshal([]byte(out), &hits); err != nil {
			t.Fatalf("search %q: %v\n%s", q, err, out)
		}
		if len(hits) == 0 {
			t.Fatalf("search %q: no hits", q)
		}
		for _, k := range []string{"eventId", "stream", "seq", "type", "session", "time", "text", "score"} {
			if _, ok := hits[0][k]; !ok {
				t.Errorf("search %q: hit lacks %q: %v", q, k, hits[0])
			}
		}
		if hits[0]["eventId"] != "t:2" && q == "记忆" {
			t.Errorf("search 记忆: got %v, want t:2", hits[0]["eventId"])
		}
	}
	t.Run("StreamFilter", func(t *testing.T) {
		code, out, _ := cli(t, "", "--root", root, "search", "--json", "--cwd", "/elsewhere", "记忆")
		if code != 0 || strings.TrimSpace(out) != "[]" {
			t.Fatalf("exit %d, got %s, want []", code, out)
		}
		code, out, _ = cli(t, "", "--root", root, "search", "--json", "--cwd", "/home/u/proj/", "记忆")
		if code != 0 || !strings.Contains(out, "t:2") {
			t.Fatalf("exit %d, got %s", code, out)
		}
	})
	t.Run("BadStream", func(t *testing.T) {
		code, _, errs := cli(t, "", "--root", root, "search", "--stream", "nope", "x")
		if code != 2 || !strings.Contains(errs, "nope") {
			t.Fatalf("exit %d, %s", code, errs)
		}
	})
}

func TestSQLReadOnly(t *testing.T) {
	root := t.TempDir()
	cli(t, goodLines, "--root", root, "ingest")
	code, out, errs := cli(t, "", "--root", root, "sql", "--json", "SELECT count(*) AS n FROM events")
	if code != 0 || !strings.Contains(out, `"n": 3`) {
		t.Fatalf("exit %d out %s err %s", code, out, errs)
	}
	for _, q := range []string{"DELETE FROM events", "INSERT INTO cursors(stream, seq) VALUES ('x', 1)", "DROP TABLE events", "UPDATE events SET type='x'"} {
		code, _, errs := cli(t, "", "--root", root, "sql", q)
		if code == 0 || !strings.Contains(errs, "read-only") {
			t.Errorf("%s: exit %d, stderr %q; want a read-only refusal", q, code, errs)
		}
	}
	code, out, _ = cli(t, "", "--root", root, "sql", "SELECT count(*) AS n FROM events")
	if code != 0 || !strings.Contains(out, "3") {
		t.Fatalf("events changed after refused writes: %s", out)
	}
}

func TestSecondWriterNamesHolder(t *testing.T) {
	root := t.TempDir()
	release, err := observer.LockRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	code, _, errs := cli(t, goodLines, "--root", root, "ingest")
	if code != 1 || !strings.Contains(errs, "process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("exit %d, stderr %q: want the holder's pid", code, errs)
	}
}

func TestVerifyAndStats(t *testing.T) {
	root := t.TempDir()
	cli(t, goodLines, "--root", root, "ingest")
	code, out, errs := cli(t, "", "--root", root, "verify")
	if code != 0 || strings.TrimSpace(out) != "ok: 1 stream(s), 1 segment(s), 3 event(s) verified" {
		t.Fatalf("exit %d out %s err %s", code, out, errs)
	}
	code, out, _ = cli(t, "", "--root", root, "stats", "--json")
	var st rootStats
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Events != 3 || len(st.Streams) != 1 || st.LogBytes == 0 {
		t.Fatalf("exit %d stats %s", code, out)
	}
	// Flip a byte in the middle of the segment: verify names it.
	segs, _ := filepath.Glob(filepath.Join(root, "log", "*", "*.jsonl.zst"))
	b, _ := os.ReadFile(segs[0])
	b[len(b)-10] ^= 0xff
	os.WriteFile(segs[0], b, 0o600)
	code, out, _ = cli(t, "", "--root", root, "verify")
	if code != 1 || !strings.Contains(out, filepath.Base(segs[0])) || !strings.Contains(out, "offset") {
		t.Fatalf("exit %d out %s: want the segment and offset", code, out)
	}
}

func TestHelpAndUsage(t *testing.T) {
	for name := range commands {
		code, out, _ := cli(t, "", name, "--help")
		if code != 0 || !strings.Contains(out, "usage: dshmem") {
			t.Errorf("%s --help: exit %d, %q", name, code, out)
		}
	}
	code, _, errs := cli(t, "", "serach", "x")
	if code != 2 || !strings.Contains(errs, `"search"`) {
		t.Errorf("typo: exit %d, %q", code, errs)
	}
	code, _, errs = cli(t, "", "search", "--limit", "zero", "x")
	if code != 2 || !strings.Contains(errs, "--help") {
		t.Errorf("bad flag: exit %d, %q", code, errs)
	}
}

// TestDemo runs 'dshmem demo' as README's first command does: it exits
// 0, ends by saying the temporary root is gone, and it is (the steps
// themselves are observer/demo's tests).
func TestDemo(t *testing.T) {
	code, out, errs := cli(t, "", "demo")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	first, _, _ := strings.Cut(out, "\n")
	root, ok := strings.CutPrefix(first, "dshmem demo — a fresh root at ")
	if !ok {
		t.Fatalf("first line %q does not name the root", first)
	}
	if !strings.HasSuffix(out, "Done; the temporary root was removed (run 'dshmem demo --keep' to explore it).\n") {
		t.Errorf("demo output does not end by saying the root was removed:\n%s", out)
	}
	if _, err := os.Stat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat %s after the demo: %v, want it gone", root, err)
	}
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
	} {
		code, _, errs := cli(t, "", append([]string{"--root", root}, args...)...)
		if code != 1 || !strings.Contains(errs, "no memory root") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 naming the missing root", args, code, errs)
		}
		if _, err := os.Stat(root); err == nil {
			t.Fatalf("%v created the root %s", args, root)
		}
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(t, "", append([]string{"--root", t.TempDir()}, tc.args...)...)
			if code != 2 || out != "" {
				t.Fatalf("exit %d, stdout %q; want exit 2 and nothing on stdout", code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
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
		if code != 0 || viaHelp != viaFlag {
			t.Errorf("help %s: exit %d, got\n%s\nwant\n%s", name, code, viaHelp, viaFlag)
		}
	}
	_, out, _ := cli(t, "", "remember", "--help")
	if !strings.Contains(out, "importance 0–3 (default 1)") || strings.Contains(out, "default -1") {
		t.Errorf("remember --help: --importance default not shown as 1:\n%s", out)
	}
}

func TestMigrateStatus(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := cli(t, goodLines, "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := cli(t, "", "--root", root, "migrate", "status")
	if code != 0 || !strings.Contains(out, "applied  00001_events.sql") || strings.Contains(out, "{") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want one line per migration, e.g. \"1  applied  00001_events.sql\"", code, out, errs)
	}
}

func TestIngestMissingFileSaysWhatToPass(t *testing.T) {
	code, _, errs := cli(t, "", "--root", t.TempDir(), "ingest", "/nonexistent/x.jsonl")
	if code != 1 || !strings.Contains(errs, "no such file") || !strings.Contains(errs, "standard input") || strings.Contains(errs, "open input") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}
