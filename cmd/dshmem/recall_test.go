package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memoryLines are memory/remember events in the workspace /home/u/proj
// plus one global entry.
func memoryLines() string {
	var b strings.Builder
	for i, c := range []string{
		"部署前先跑 go test ./...，再推送 DSH 记忆注入",
		"rotation probe alpha",
		"rotation probe alpha",
		"The release checklist lives in docs/release.md",
	} {
		fmt.Fprintf(&b, `{"id":"r:%d","type":"memory/remember","time":"2026-08-18T10:00:0%dZ","session":"s1","cwd":"/home/u/proj","data":{"content":%q}}`+"\n", i, i, c)
	}
	b.WriteString(`{"id":"r:g","type":"memory/remember","time":"2026-08-18T10:00:09Z","data":{"content":"global preference: answer in English"}}` + "\n")
	return b.String()
}

func TestRecallCommand(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := cli(t, goodLines+memoryLines(), "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	recallJSON := func(t *testing.T, args ...string) map[string]any {
		t.Helper()
		code, out, errs := cli(t, "", append([]string{"--root", root, "recall", "--timeout", "1m", "--json", "--cwd", "/home/u/proj"}, args...)...)
		require.EqualValues(t, 0, code, "recall %v: exit %d: %s", args, code, errs)
		var res map[string]any
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("recall %v: %v\n%s", args, err, out)
		}
		return res
	}
	items := func(res map[string]any) []map[string]any {
		var out []map[string]any
		for _, it := range res["items"].([]any) {
			out = append(out, it.(map[string]any))
		}
		return out
	}
	t.Run("JSONShape", func(t *testing.T) {
		its := items(recallJSON(t, "记忆注入"))
		require.NotEqualValues(t, 0, len(its), "no items")
		for _, k := range []string{"id", "kind", "scope", "title", "text", "score", "status", "flags"} {
			_, ok := its[0][k]
			assert.True(t, ok, "item lacks %q: %v", k, its[0])
		}
		assert.Contains(t, its[0]["text"].(string), "记忆注入", "got %v, want the entry about 记忆注入", its[0]["text"])
	})
	t.Run("GlobalScopeToo", func(t *testing.T) {
		its := items(recallJSON(t, "English"))
		assert.False(t, len(its) != 1 || its[0]["scope"] != "global", "got %v, want the global entry", its)
	})
	t.Run("OtherWorkspaceNotSearched", func(t *testing.T) {
		code, out, _ := cli(t, "", "--root", root, "recall", "--timeout", "1m", "--json", "--cwd", "/elsewhere", "记忆注入")
		assert.False(t, code != 0 || !strings.Contains(out, `"items": []`) || !strings.Contains(out, "guidance"), "exit %d, got %s; want no items and guidance", code, out)
	})
	t.Run("SessionRotates", func(t *testing.T) {
		a := items(recallJSON(t, "--limit", "1", "--session", "s9", "rotation probe"))
		b := items(recallJSON(t, "--limit", "1", "--session", "s9", "rotation probe"))
		assert.False(t, len(a) != 1 || len(b) != 1 || a[0]["id"] == b[0]["id"], "got %v then %v, want two different entries", a, b)
	})
	t.Run("ExactID", func(t *testing.T) {
		first := items(recallJSON(t, "release checklist"))
		require.NotEqualValues(t, 0, len(first), "no items")
		its := items(recallJSON(t, first[0]["id"].(string)))
		assert.False(t, len(its) != 1 || its[0]["id"] != first[0]["id"], "got %v, want entry %v", its, first[0]["id"])
	})
	t.Run("NoMatchGuidance", func(t *testing.T) {
		code, out, _ := cli(t, "", "--root", root, "recall", "--timeout", "1m", "--cwd", "/home/u/proj", "xylophone")
		assert.False(t, code != 0 || !strings.Contains(out, "xylophone") || !strings.Contains(out, "Try"), "exit %d, got %s", code, out)
	})
	t.Run("SearchKinds", func(t *testing.T) {
		for _, kind := range []string{"semantic", "all"} {
			code, out, errs := cli(t, "", "--root", root, "search", "--json", "--kind", kind, "记忆注入")
			require.EqualValues(t, 0, code, "--kind %s: exit %d: %s", kind, code, errs)
			var hits []map[string]any
			err := json.Unmarshal([]byte(out), &hits)
			require.NoError(t, err, "--kind %s: %v, %s", kind, err, out)
			require.NotEqualValues(t, 0, len(hits), "--kind %s: %v, %s", kind, err, out)
			kinds := map[any]bool{}
			for _, h := range hits {
				kinds[h["kind"]] = true
			}
			if kind == "all" && !(kinds["semantic"] && kinds["episodic"]) {
				t.Errorf("--kind all: got kinds %v, want both", kinds)
			}
			if kind == "semantic" && (len(kinds) != 1 || !kinds["semantic"]) {
				t.Errorf("--kind semantic: got kinds %v", kinds)
			}
		}
		code, _, errs := cli(t, "", "--root", root, "search", "--kind", "nope", "x")
		assert.False(t, code != 2 || !strings.Contains(errs, "nope"), "--kind nope: exit %d, %s", code, errs)
	})
	t.Run("BadFlags", func(t *testing.T) {
		for _, args := range [][]string{{"recall"}, {"recall", "--limit", "0", "x"}, {"recall", "--bytes", "0", "x"}, {"recall", "--timeout", "-1s", "x"}} {
			code, _, _ := cli(t, "", append([]string{"--root", root}, args...)...)
			assert.EqualValues(t, 2, code, "%v: exit %d, want 2", args, code)
		}
	})
}
