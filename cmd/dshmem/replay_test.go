package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/replay"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sevenCompactions is one day of a session with seven compaction summaries.
func sevenCompactions() string {
	var b strings.Builder
	b.WriteString(`{"id":"i:0","type":"session/start","time":"2026-08-18T09:00:00+08:00","session":"s1","cwd":"/home/u/proj","data":{"origin":"top"}}` + "\n")
	for i := 1; i <= 7; i++ {
		fmt.Fprintf(&b, `{"id":"i:%d","type":"compaction/summary","time":"2026-08-18T%02d:00:00+08:00","session":"s1","data":{"compactionId":"c-%d","text":"Checkpoint %d: what was done.\nSecond line of checkpoint %d."}}`+"\n", i, 9+i, i, i, i)
	}
	return b.String()
}

// The incident: a day file cut to its first 16 lines is named by
// replay --verify and restore brings back its exact bytes.
func TestIncident(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := cli(t, sevenCompactions(), "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	day := filepath.Join(root, "sessions", "2026-08-18.md")
	orig, err := os.ReadFile(day)
	require.NoError(t, err)
	n := strings.Count(string(orig), "<!-- compaction:")
	require.EqualValues(t, 7, n, "got %d compaction blocks, want 7:\n%s", n, orig)
	code, out, errs := cli(t, "", "--root", root, "replay", "--verify")
	require.EqualValues(t, 0, code, "verify of an intact root: exit %d\n%s%s", code, out, errs)
	assert.Regexp(t, `^ok: \d+ projection files and the index equal their replay of \d+ events\n$`, out, "counts in proper English")

	lines := strings.SplitAfter(string(orig), "\n")
	os.WriteFile(day, []byte(strings.Join(lines[:16], "")), 0o644)

	code, out, errs = cli(t, "", "--root", root, "replay", "--verify")
	require.EqualValues(t, 1, code, "verify: exit %d, want 1 naming the file:\n%s%s", code, out, errs)
	require.Contains(t, out, "sessions/2026-08-18.md: differs", "verify: exit %d, want 1 naming the file:\n%s%s", code, out, errs)
	assert.EqualValues(t, 1, strings.Count(out, "differs"), "verify named more than the damaged file:\n%s", out)
	code, out, errs = cli(t, "", "--root", root, "restore", "sessions/2026-08-18.md")
	require.EqualValues(t, 0, code, "restore to stdout: exit %d %s\ngot\n%s\nwant\n%s", code, errs, out, orig)
	require.Equal(t, string(orig), out, "restore to stdout: exit %d %s\ngot\n%s\nwant\n%s", code, errs, out, orig)
	code, _, errs = cli(t, "", "--root", root, "restore", "sessions/2026-08-18.md", "--out", day)
	require.EqualValues(t, 0, code, errs)
	got, _ := os.ReadFile(day)
	require.Equal(t, string(orig), string(got), "restore --out: got\n%s\nwant\n%s", got, orig)
	if code, out, _ := cli(t, "", "--root", root, "replay", "--verify"); code != 0 {
		t.Fatalf("verify after restore: exit %d\n%s", code, out)
	}
	// As of 12:30+08:00 only the first three checkpoints existed.
	code, out, _ = cli(t, "", "--root", root, "restore", "sessions/2026-08-18.md", "--at", "2026-08-18T12:30:00+08:00")
	assert.False(t, code != 0 || strings.Count(out, "<!-- compaction:") != 3 || !strings.Contains(out, "c-3") || strings.Contains(out, "c-4 "), "restore --at: exit %d\n%s", code, out)
}

// A hand edit synced into the log is in the replayed files, and the
// live root equals its replay byte for byte.
func TestHandEditRoundTrip(t *testing.T) {
	root := t.TempDir()
	in := sevenCompactions() + `{"id":"m:1","type":"memory/remember","time":"2026-08-18T09:00:01Z","data":{"content":"Use pnpm, not npm.","type":"preference","importance":2}}
{"id":"m:2","type":"memory/remember","time":"2026-08-18T09:00:02Z","data":{"content":"Staging DB on 5433.","type":"fact","tags":["database"]}}
`
	if code, _, errs := cli(t, in, "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	g := filepath.Join(root, "global.md")
	b, _ := os.ReadFile(g)
	os.WriteFile(g, []byte(strings.Replace(string(b), "Use pnpm, not npm.\n", "Use pnpm, not npm, not yarn.\n", 1)), 0o644)
	code, out, errs := cli(t, "", "--root", root, "sync")
	require.EqualValues(t, 0, code, "sync: exit %d\n%s%s", code, out, errs)
	require.Contains(t, out, "captured", "sync: exit %d\n%s%s", code, out, errs)
	require.Contains(t, out, "global.md (1 ops)", "sync: exit %d\n%s%s", code, out, errs)
	dir := filepath.Join(t.TempDir(), "replayed")
	code, out, errs = cli(t, "", "--root", root, "replay", "--out", dir)
	require.EqualValues(t, 0, code, "replay: exit %d\n%s%s", code, out, errs)
	require.Contains(t, out, "rebuilt", "replay: exit %d\n%s%s", code, out, errs)
	rb, _ := os.ReadFile(filepath.Join(dir, "global.md"))
	assert.Contains(t, string(rb), "not yarn", "the edit is not in the replayed global.md:\n%s", rb)
	diffs, n, err := replay.CompareFiles(root, dir)
	assert.False(t, err != nil || len(diffs) > 0 || n < 5, "live vs replay over %d files: %v %v", n, diffs, err)
	if code, out, _ := cli(t, "", "--root", root, "replay", "--verify"); code != 0 {
		t.Errorf("verify: exit %d\n%s", code, out)
	}
}

func TestRestorePaths(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := cli(t, sevenCompactions(), "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "2026-08-18.md"), []byte("secret\n"), 0o644)
	os.Symlink(outside, filepath.Join(root, "knowledge"))
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"../etc/passwd"}, 1, `".." element`},
		{[]string{"/etc/passwd"}, 1, "is absolute"},
		{[]string{"knowledge/2026-08-18.md"}, 1, "symlink"},
		{[]string{"index.db"}, 1, "not a projection"},
		{[]string{"sessions/2026-08-18.md", "--at", "yesterday"}, 2, "neither a seq"},
		{[]string{"sessions/2026-08-18.md", "--at", "3"}, 1, "give --at a time"},
		{[]string{}, 2, "exactly one PATH"},
	} {
		code, out, errs := cli(t, "", append([]string{"--root", root, "restore"}, c.args...)...)
		assert.False(t, code != c.code || !strings.Contains(errs, c.want) || out != "", "restore %v: exit %d, stderr %q, stdout %q; want exit %d saying %q", c.args, code, errs, out, c.code, c.want)
	}
}
