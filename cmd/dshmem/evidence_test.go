package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliPlay feeds a history of testdata/evidence to the CLI: each part
// before a "#checkpoint" line is ingested, then checkpointed (--force);
// {{entry:1}} becomes the first entry's id. It returns what the
// checkpoints printed.
func cliPlay(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../testdata/evidence/" + name)
	require.NoError(t, err)
	ph := regexp.MustCompile(`\{\{entry:1\}\}`)
	var part []string
	var printed strings.Builder
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case l == "#checkpoint":
			in := strings.Join(part, "\n") + "\n"
			if ph.MatchString(in) {
				es := cliEntries(t, root)
				require.NotEmpty(t, es)
				in = ph.ReplaceAllString(in, es[0]["id"].(string))
			}
			code, _, errs := cli(t, in, "--root", root, "ingest")
			require.EqualValues(t, 0, code, "ingest: %s", errs)
			code, out, errs := cli(t, "", "--root", root, "checkpoint", "--force")
			require.EqualValues(t, 0, code, "checkpoint: %s\n%s", out, errs)
			printed.WriteString(out)
			part = nil
		case l == "" || strings.HasPrefix(l, "#"):
		default:
			part = append(part, l)
		}
	}
	return printed.String()
}

// TestHistoryShowsProcedureStages: 'dshmem history p-…' lists every
// stage change of a learned procedure with its reason and evidence.
func TestHistoryShowsProcedureStages(t *testing.T) {
	root := t.TempDir()
	printed := cliPlay(t, root, "procedure-p3-confirmed.jsonl")
	assert.Regexp(t, `procedure +p-[0-9a-f]{16}  P1 → P3: succeeded in session s3`, printed, "checkpoint output")
	code, out, errs := cli(t, "", "--root", root, "sql", "SELECT id FROM procedures")
	require.EqualValues(t, 0, code, "sql: %s", errs)
	id := regexp.MustCompile(`p-[0-9a-f]{16}`).FindString(out)
	require.NotEmpty(t, id, "no procedure in %s", out)
	code, out, errs = cli(t, "", "--root", root, "history", id)
	require.EqualValues(t, 0, code, "history: %s", errs)
	for _, want := range []string{"(procedure, P3, scope ws-", "v1 ", " P0 ", "v2 ", " P1 ", "v3 ", " P3 ",
		"steps: bash go vet ./... → bash go test ./...", "reason: P1 → P3: succeeded in session s3", "the user confirmed it", "evidence: s3:"} {
		assert.Contains(t, out, want, "history lacks %q:\n%s", want, out)
	}
	code, out, _ = cli(t, "", "--root", root, "history", "p-0123456789abcdef")
	assert.EqualValues(t, 1, code, "history of an unknown procedure: %s", out)
}

// TestLowConfidenceMarked: an entry corrected twice after it was shown
// (0.9 → 0.6, then shown in a third session: reuse +0.05, correction
// −0.3 → 0.35) is marked low confidence in entries, show and recall.
func TestLowConfidenceMarked(t *testing.T) {
	root := t.TempDir()
	cliPlay(t, root, "confidence-correction.jsonl")
	es := cliEntries(t, root)
	require.Len(t, es, 1)
	id := es[0]["id"].(string)
	in := strings.ReplaceAll(`{"id":"s3:0","type":"user/message","time":"2026-08-19T00:01:00Z","session":"s3","cwd":"/home/u/shop","data":{"text":"api port?"}}
{"id":"s3:1","type":"memory/shown","time":"2026-08-19T00:02:00Z","session":"s3","cwd":"/home/u/shop","data":{"entries":["ID"]}}
{"id":"s3:2","type":"assistant/message","time":"2026-08-19T00:03:00Z","session":"s3","cwd":"/home/u/shop","data":{"text":"8080"}}
{"id":"s3:3","type":"user/message","time":"2026-08-19T00:04:00Z","session":"s3","cwd":"/home/u/shop","data":{"text":"不对"}}
`, "ID", id)
	code, _, errs := cli(t, in, "--root", root, "ingest")
	require.EqualValues(t, 0, code, "ingest: %s", errs)
	code, _, errs = cli(t, "", "--root", root, "checkpoint", "--force")
	require.EqualValues(t, 0, code, "checkpoint: %s", errs)

	es = cliEntries(t, root)
	require.InDelta(t, 0.35, es[0]["confidence"], 1e-9, "entries: %v", es)
	_, out, _ := cli(t, "", "--root", root, "entries")
	assert.Contains(t, out, "[low confidence 0.35]", "entries:\n%s", out)
	_, out, _ = cli(t, "", "--root", root, "show", id)
	assert.Contains(t, out, "confidence 0.35 (low confidence", "show:\n%s", out)
	_, out, _ = cli(t, "", "--root", root, "recall", "--timeout", "1m", "--cwd", "/home/u/shop", "api port 8080")
	assert.Contains(t, out, "low-confidence", "recall:\n%s", out)
	_, out, _ = cli(t, "", "--root", root, "history", id)
	assert.Contains(t, out, "reason: correction: the user replied", "history:\n%s", out)
	sum, err := os.ReadFile(filepath.Join(root, "scopes", es[0]["scope"].(string), "memory_summary.md"))
	require.NoError(t, err)
	assert.Contains(t, string(sum), "The API listens on port 8080 (low confidence)", "memory_summary.md:\n%s", sum)
	code, out, errs = cli(t, "", "--root", root, "replay", "--verify")
	assert.EqualValues(t, 0, code, "replay --verify: %s\n%s", out, errs)
}

// TestGlobalConfidenceFromWorkspace: a global entry corrected twice
// after it was shown in a workspace session drops to 0.40 through ops
// in the global stream: the checkpoint says so, the entry is marked low
// confidence, its history names the workspace's events, and replay
// --verify reproduces the index and every file.
func TestGlobalConfidenceFromWorkspace(t *testing.T) {
	root := t.TempDir()
	code, out, errs := cli(t, "", "--root", root, "remember", "--global", "I prefer short answers")
	require.EqualValues(t, 0, code, "remember: %s", errs)
	id := strings.TrimSpace(out)
	var in strings.Builder
	for i, l := range []string{
		`"user/message","data":{"text":"explain the build"}`,
		`"memory/shown","data":{"entries":["` + id + `"]}`,
		`"assistant/message","data":{"text":"It runs make."}`,
		`"user/message","data":{"text":"no, that's wrong"}`,
		`"memory/shown","data":{"entries":["` + id + `"]}`,
		`"assistant/message","data":{"text":"It runs go build."}`,
		`"user/message","data":{"text":"no, that's wrong"}`,
		`"session/end","data":{}`,
	} {
		in.WriteString(`{"id":"lc:` + strconv.Itoa(i) + `","time":"2026-08-18T09:0` + strconv.Itoa(i) + `:00Z","session":"lc","cwd":"/home/u/other","type":` + l + "}\n")
	}
	code, _, errs = cli(t, in.String(), "--root", root, "ingest")
	require.EqualValues(t, 0, code, "ingest: %s", errs)
	code, out, errs = cli(t, "", "--root", root, "checkpoint", "--force")
	require.EqualValues(t, 0, code, "checkpoint: %s", errs)
	assert.Contains(t, out, "and 2 ops for global entries, committed in global at seq 2", "checkpoint:\n%s", out)

	_, out, _ = cli(t, "", "--root", root, "entries")
	assert.Contains(t, out, "I prefer short answers  [low confidence 0.40]", "entries:\n%s", out)
	_, out, _ = cli(t, "", "--root", root, "history", id)
	assert.Contains(t, out, "memory/ops global seq 2 dshmem:evidence:", "history:\n%s", out)
	assert.Regexp(t, `evidence ws-[0-9a-f]{20}/lc:1, ws-[0-9a-f]{20}/lc:3`, out, "history")
	code, out, errs = cli(t, "", "--root", root, "replay", "--verify")
	assert.EqualValues(t, 0, code, "replay --verify: %s\n%s", out, errs)
}
