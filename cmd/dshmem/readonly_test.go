package main

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/observer/httpapi"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aDayOfMemory is a day of compactions, two global memories and a
// workspace memory: every kind of projection file.
func aDayOfMemory() string {
	return sevenCompactions() + `{"id":"m:1","type":"memory/remember","time":"2026-08-18T09:00:01Z","data":{"content":"Use pnpm, not npm.","type":"preference","importance":2}}
{"id":"m:2","type":"memory/remember","time":"2026-08-18T09:00:02Z","data":{"content":"Staging DB on 5433.","type":"fact","tags":["database"]}}
{"id":"m:3","type":"memory/remember","time":"2026-08-18T09:00:03Z","cwd":"/home/u/proj","data":{"content":"The cart module owns checkout.","type":"fact"}}
`
}

// rootFiles reads every file under root, but SQLite's shared-memory
// file: its bytes are the lock state of whoever has the index open (a
// reader too), not content. With skipIndex the index and its WAL are
// left out as well, for a root whose writer may checkpoint them.
func rootFiles(t *testing.T, root string, skipIndex bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		if rel == sqlstore.IndexFile+"-shm" || skipIndex && strings.HasPrefix(rel, sqlstore.IndexFile) {
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	require.NoError(t, err)
	return out
}

// sameFiles fails for every file created, removed or changed.
func sameFiles(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for p := range got {
		_, ok := want[p]
		assert.True(t, ok, "%s created %s", what, p)
	}
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s removed %s", what, p)
		} else if g != w {
			t.Errorf("%s changed %s", what, p)
		}
	}
}

// run runs the built binary and returns its exit code and output.
func runBin(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// startServe runs `dshmem serve` over root as a child process and
// returns once it is ready: its listening line (written after
// serve.json) and an answer from GET /v1/healthz. stop sends SIGTERM
// and waits for exit 0.
func startServe(t *testing.T, bin, root string) (stop func()) {
	t.Helper()
	// No scheduled backup or rotation, and no background fill of
	// vectors: the callers compare the root before and after, and its
	// events are older than a backup's due.
	cmd := exec.Command(bin, "--root", root, "serve", "--no-watch", "--maintenance-every", "0", "--vectors=false")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() || !strings.Contains(sc.Text(), "listening on") {
		cmd.Process.Kill()
		t.Fatalf("serve: got %q, want the listening line", sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	info, err := httpapi.ReadServeFile(root)
	if err != nil || info.PID != cmd.Process.Pid {
		cmd.Process.Kill()
		t.Fatalf("serve.json: %+v, %v", info, err)
	}
	req, _ := http.NewRequest("GET", "http://"+info.Addr+"/v1/healthz", nil)
	req.Header.Set("Authorization", "Bearer "+info.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	var h httpapi.Health
	json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if !h.OK || h.PID != cmd.Process.Pid {
		cmd.Process.Kill()
		t.Fatalf("healthz: got %+v", h)
	}
	return func() {
		t.Helper()
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			require.NoError(t, err, "serve exit: %v, want 0", err)
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatal("serve did not stop within 30 s of SIGTERM")
		}
	}
}

// TestReadsBesideServe runs `dshmem serve` and, beside it, every read
// command as a process of its own: each answers (the old replay
// --verify and restore failed on the writer lock), and the live root's
// files, log and index are byte for byte what they were.
func TestReadsBesideServe(t *testing.T) {
	bin := buildDshmem(t)
	root := t.TempDir()
	if code, _, errs := cli(t, aDayOfMemory(), "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	stop := startServe(t, bin, root)
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	global, err := os.ReadFile(filepath.Join(root, "global.md"))
	require.NoError(t, err)
	day, _ := os.ReadFile(filepath.Join(root, "sessions", "2026-08-18.md"))
	before := rootFiles(t, root, false)
	id := ""
	for _, c := range []struct {
		args  []string
		check func(out string) bool
	}{
		{[]string{"replay", "--verify"}, func(out string) bool { return strings.HasPrefix(out, "ok: ") }},
		{[]string{"restore", "global.md"}, func(out string) bool { return out == string(global) }},
		{[]string{"restore", "sessions/2026-08-18.md"}, func(out string) bool { return out == string(day) }},
		{[]string{"verify"}, func(out string) bool { return strings.HasPrefix(out, "ok: ") }},
		{[]string{"search", "Checkpoint"}, func(out string) bool { return strings.Contains(out, "compaction/summary") }},
		{[]string{"search", "--kind", "semantic", "--json", "pnpm"}, func(out string) bool {
			var hits []map[string]any
			if json.Unmarshal([]byte(out), &hits) != nil || len(hits) == 0 {
				return false
			}
			id, _ = hits[0]["id"].(string)
			return id != ""
		}},
		{[]string{"recall", "--timeout", "1m", "--cwd", "/home/u/proj", "cart"}, func(out string) bool { return strings.Contains(out, "cart module") }},
		{[]string{"entries"}, func(out string) bool { return strings.Contains(out, "Use pnpm") }},
		{[]string{"stats", "--json"}, func(out string) bool { return strings.Contains(out, `"events": 11`) }},
		{[]string{"sql", "SELECT count(*) AS n FROM events"}, func(out string) bool { return strings.Contains(out, "11") }},
		{[]string{"replay", "--out", filepath.Join(t.TempDir(), "rebuilt")}, func(out string) bool { return strings.HasPrefix(out, "rebuilt 11 events") }},
	} {
		code, out, errs := runBin(t, bin, append([]string{"--root", root}, c.args...)...)
		assert.False(t, code != 0 || !c.check(out), "%v beside serve: exit %d\nstdout:\n%s\nstderr:\n%s", c.args, code, out, errs)
		if errs != "" && c.args[0] != "sql" { // sql counts its rows on stderr
			t.Errorf("%v beside serve: stderr %q, want nothing (the index is in step with the log)", c.args, errs)
		}
	}
	if code, out, errs := runBin(t, bin, "--root", root, "history", id); code != 0 || !strings.Contains(out, "v1") {
		t.Errorf("history %s beside serve: exit %d\n%s%s", id, code, out, errs)
	}
	sameFiles(t, "the read commands", rootFiles(t, root, false), before)

	// The server still holds the root and takes writes.
	code, out, errs := runBin(t, bin, "--root", root, "remember", "--global", "Deploy on Fridays is fine.")
	require.EqualValues(t, 0, code, "remember after the reads: exit %d\n%s%s", code, out, errs)
	require.Contains(t, errs, "sent to the server holding the root", "remember after the reads: exit %d\n%s%s", code, out, errs)
	stop()
	stop = nil
}

// tornRoot returns a root whose log ends in a torn tail: the first
// ingest is indexed, the batch of a second one is cut in its middle,
// as a crash during its write leaves it (never acknowledged, so never
// folded).
func tornRoot(t *testing.T) (root, seg string) {
	t.Helper()
	root = t.TempDir()
	code, _, errs := cli(t, aDayOfMemory(), "--root", root, "ingest")
	require.EqualValues(t, 0, code, errs)
	segs, _ := filepath.Glob(filepath.Join(root, "log", "global", "*.jsonl.zst"))
	require.Len(t, segs, 1, "got segments %v, want one", segs)
	seg = segs[0]
	whole, _ := os.ReadFile(seg)
	other := t.TempDir()
	copyTree(t, root, other)
	more := `{"id":"m:9","type":"memory/remember","time":"2026-08-18T09:00:09Z","data":{"content":"This memory was never acknowledged.","type":"fact"}}` + "\n"
	if code, _, errs := cli(t, more, "--root", other, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	longer, _ := os.ReadFile(filepath.Join(other, "log", "global", filepath.Base(seg)))
	require.False(t, len(longer) <= len(whole)+10, "the second ingest wrote no batch")
	require.NoError(t, os.WriteFile(seg, longer[:len(whole)+(len(longer)-len(whole))/2], 0o644))
	return root, seg
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	require.NoError(t, err)
}

// TestReadTornTail: the read commands on a root with a torn tail and no
// writer report it, read up to the last whole batch and leave every
// byte of the root as it was; the next writer cuts it off.
func TestReadTornTail(t *testing.T) {
	root, seg := tornRoot(t)
	global, _ := os.ReadFile(filepath.Join(root, "global.md"))
	before := rootFiles(t, root, true)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stats", "--json"}, `"events": 11`},
		{[]string{"search", "--kind", "semantic", "memory"}, "No memory entries match"},
		{[]string{"replay", "--verify"}, "ok: "},
		{[]string{"restore", "global.md"}, string(global)},
	} {
		code, out, errs := cli(t, "", append([]string{"--root", root}, c.args...)...)
		assert.False(t, code != 0 || !strings.Contains(out, c.want), "%v: exit %d, stdout %q, want %q\nstderr: %s", c.args, code, out, c.want, errs)
		assert.False(t, !strings.Contains(errs, seg+" ends in") || !strings.Contains(errs, "incomplete batch"), "%v: stderr %q does not name the torn tail of %s", c.args, errs, seg)
	}
	if code, out, errs := cli(t, "", "--root", root, "stats"); code != 0 || !strings.Contains(errs, "left by a crash") || !strings.Contains(errs, "dshmem repair") {
		t.Errorf("stats: exit %d, stderr %q; want the tail told as a crash's, with what cuts it off\n%s", code, errs, out)
	}
	if code, out, _ := cli(t, "", "--root", root, "verify"); code != 1 || !strings.Contains(out, "torn tail") {
		t.Errorf("verify: exit %d, stdout %q; want the torn tail as a problem", code, out)
	}
	sameFiles(t, "the read commands", rootFiles(t, root, true), before)

	// The writer's open cuts it off, keeping a .broken copy.
	code, _, errs := cli(t, "", "--root", root, "ingest")
	require.EqualValues(t, 0, code, "ingest: exit %d, stderr %q; want the repair told", code, errs)
	require.Contains(t, errs, "repaired a torn tail", "ingest: exit %d, stderr %q; want the repair told", code, errs)
	_, err := os.Stat(seg + ".broken")
	assert.NoError(t, err, "no .broken copy after the writer's repair")
}

// TestReadsCreateNothing: on a root no process holds, the read commands
// create no file or directory and change none, but for the two files
// SQLite keeps beside a WAL database for its readers (index.db-shm, and
// an empty index.db-wal).
func TestReadsCreateNothing(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := cli(t, aDayOfMemory(), "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	before := rootFiles(t, root, false)
	for _, args := range [][]string{
		{"stats"}, {"search", "pnpm"}, {"recall", "--cwd", "/home/u/proj", "cart"}, {"entries"},
		{"sql", "SELECT 1"}, {"verify"}, {"replay", "--verify"}, {"restore", "global.md"},
		{"replay", "--out", filepath.Join(t.TempDir(), "r")},
	} {
		code, out, errs := cli(t, "", append([]string{"--root", root}, args...)...)
		if code != 0 || errs != "" && args[0] != "sql" {
			t.Errorf("%v: exit %d, stderr %q\n%s", args, code, errs, out)
		}
	}
	after := rootFiles(t, root, false)
	if wal, ok := after[sqlstore.IndexFile+"-wal"]; ok && wal == "" {
		delete(after, sqlstore.IndexFile+"-wal")
	}
	sameFiles(t, "the read commands", after, before)
}

// TestReadsIndexBehind: with no process holding the root, an index that
// has not folded the end of the log (a crash between an append and its
// fold) is answered from as it is, with a note, and replay --verify
// counts it as a difference; while a writer holds the root it is that
// writer's work in flight, only noted.
func TestReadsIndexBehind(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := cli(t, aDayOfMemory(), "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	other := t.TempDir()
	copyTree(t, root, other)
	more := `{"id":"m:9","type":"memory/remember","time":"2026-08-18T09:00:09Z","data":{"content":"Folded in the other root only.","type":"fact"}}` + "\n"
	if code, _, errs := cli(t, more, "--root", other, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	os.RemoveAll(filepath.Join(root, "log"))
	copyTree(t, filepath.Join(other, "log"), filepath.Join(root, "log"))
	before := rootFiles(t, root, true)

	code, out, errs := cli(t, "", "--root", root, "search", "--kind", "semantic", "Folded")
	assert.False(t, code != 0 || !strings.Contains(out, "No memory entries match") || !strings.Contains(errs, "has not folded the last 1 event(s)") || !strings.Contains(errs, "no process holds the root"), "search: exit %d\nstdout %s\nstderr %s", code, out, errs)
	code, out, _ = cli(t, "", "--root", root, "stats", "--json")
	assert.False(t, code != 0 || !strings.Contains(out, `"events": 12,`) || !strings.Contains(out, `"events": 3,
      "indexed": 2,`), "stats: exit %d\n%s", code, out)
	code, out, errs = cli(t, "", "--root", root, "replay", "--verify")
	assert.False(t, code != 1 || !strings.Contains(out, "index.db: behind the log: stream global is folded up to seq 2, the log ends at seq 3"), "replay --verify: exit %d\nstdout %s\nstderr %s", code, out, errs)
	sameFiles(t, "the read commands", rootFiles(t, root, true), before)

	release, err := observer.LockRoot(root) // a writer that has not folded its last append yet
	require.NoError(t, err)
	defer release()
	code, out, errs = cli(t, "", "--root", root, "replay", "--verify")
	assert.False(t, code != 0 || !strings.HasPrefix(out, "ok: ") || !strings.Contains(errs, "not compared: stream global"), "replay --verify beside the writer: exit %d\nstdout %s\nstderr %s", code, out, errs)
	code, _, errs = cli(t, "", "--root", root, "entries")
	assert.False(t, code != 0 || !strings.Contains(errs, "folds them as it goes"), "entries beside the writer: exit %d, stderr %s", code, errs)
}

// TestReadsWithoutIndex: a root whose index is gone is still read from
// its log (stats, restore, replay), replay --verify names the index as
// the difference, and the commands that answer from the index say what
// builds it.
func TestReadsWithoutIndex(t *testing.T) {
	root := t.TempDir()
	code, _, errs := cli(t, aDayOfMemory(), "--root", root, "ingest")
	require.EqualValues(t, 0, code, errs)
	global, _ := os.ReadFile(filepath.Join(root, "global.md"))
	os.Remove(filepath.Join(root, sqlstore.IndexFile))
	before := rootFiles(t, root, false)
	if code, out, errs := cli(t, "", "--root", root, "stats"); code != 0 || !strings.Contains(out, "index     none") || !strings.Contains(out, "events    11") {
		t.Errorf("stats: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := cli(t, "", "--root", root, "restore", "global.md"); code != 0 || out != string(global) {
		t.Errorf("restore: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := cli(t, "", "--root", root, "replay", "--verify"); code != 1 || !strings.Contains(out, "index.db: missing") || strings.Count(out, "\n") != 2 {
		t.Errorf("replay --verify: exit %d, want 1 naming only the index\n%s", code, out)
	}
	if code, _, errs := cli(t, "", "--root", root, "search", "pnpm"); code != 1 || !strings.Contains(errs, "no index at") || !strings.Contains(errs, "11 events") {
		t.Errorf("search: exit %d, stderr %s", code, errs)
	}
	sameFiles(t, "the read commands", rootFiles(t, root, false), before)
}

// TestReadsOlderIndex: a reader may not migrate, so an index an older
// dshmem made is not read: the index readers say what brings it up to
// date, and nothing changes until a writer does.
func TestReadsOlderIndex(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := cli(t, aDayOfMemory(), "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	global, _ := os.ReadFile(filepath.Join(root, "global.md"))
	if code, _, errs := cli(t, "", "--root", root, "migrate", "down-to", "5"); code != 0 {
		t.Fatal(errs)
	}
	before := rootFiles(t, root, false)
	for _, args := range [][]string{{"search", "pnpm"}, {"entries"}, {"sql", "SELECT 1"}, {"replay", "--verify"}} {
		code, _, errs := cli(t, "", append([]string{"--root", root}, args...)...)
		assert.False(t, code != 1 || !strings.Contains(errs, "of an older dshmem") || !strings.Contains(errs, "migrate up"), "%v: exit %d, stderr %q; want exit 1 saying what brings the index up to date", args, code, errs)
	}
	code, out, errs := cli(t, "", "--root", root, "restore", "global.md")
	assert.False(t, code != 0 || out != string(global), "restore (from the log alone): exit %d\n%s%s", code, out, errs)
	if code, out, _ := cli(t, "", "--root", root, "stats"); code != 0 || !strings.Contains(out, "not read: the index is of an older dshmem") {
		t.Errorf("stats: exit %d\n%s", code, out)
	}
	after := rootFiles(t, root, false)
	if wal, ok := after[sqlstore.IndexFile+"-wal"]; ok && wal == "" {
		delete(after, sqlstore.IndexFile+"-wal")
	}
	sameFiles(t, "the read commands", after, before)
	// Going down and up again emptied the tables the migrations own: a
	// reader says so, the next writer folds the log again.
	if code, _, errs := cli(t, "", "--root", root, "migrate", "up"); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := cli(t, "", "--root", root, "entries"); code != 0 || !strings.Contains(errs, "has not folded the last 11 event(s)") {
		t.Errorf("entries after migrate up: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := cli(t, "", "--root", root, "ingest"); code != 0 {
		t.Fatal(errs)
	}
	if code, out, errs := cli(t, "", "--root", root, "entries"); code != 0 || errs != "" || !strings.Contains(out, "Use pnpm") {
		t.Errorf("entries after a writer's open: exit %d\n%s%s", code, out, errs)
	}
}
