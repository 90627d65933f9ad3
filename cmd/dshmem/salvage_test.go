package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/httpapi"
)

// damagedRoot ingests four batches into each of three workspaces, then
// flips one byte of stream a's second batch: in its header (found by
// every open) or, with inFrame, in its data frame (found by a full
// walk: verify, or the one serve runs at start). It returns the root,
// the cwds, the streams (a first) and the seqs the flip destroyed.
func damagedRoot(t *testing.T, inFrame bool) (root string, cwds, streams []string, lost events.SeqRange) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "root")
	base := t.TempDir()
	for _, name := range []string{"a", "b", "c"} {
		cwd := filepath.Join(base, name)
		require.NoError(t, os.MkdirAll(cwd, 0o755))
		cwds = append(cwds, cwd)
		for i := range 4 {
			in := fmt.Sprintf(`{"id":"%s:%d","type":"user/message","time":"2026-08-18T10:0%d:00Z","session":"s-%s","cwd":%q,"data":{"text":"%s says the zebrafish parser %d"}}`+"\n", name, i, i, name, cwd, name, i)
			code, _, errs := cli(t, in, "--root", root, "ingest")
			require.EqualValues(t, 0, code, "%s", errs)
		}
	}
	byDir := map[string]string{}
	for _, sc := range cliScopes(t, root) {
		byDir[sc.Dir] = sc.Key
	}
	for _, c := range cwds {
		require.NotEmpty(t, byDir[c], "no stream for %s", c)
		streams = append(streams, byDir[c])
	}
	seg := filepath.Join(root, observer.LogDir, streams[0], events.SegmentName(1))
	f, err := os.Open(seg)
	require.NoError(t, err)
	r := events.NewReader(f)
	var bs []events.Batch
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		bs = append(bs, b)
	}
	f.Close()
	require.Len(t, bs, 4)
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	at := bs[1].Offset + 20
	if inFrame {
		at = bs[1].Offset + 96 + int64(bs[1].Header.Length)/2
	}
	b[at] ^= 0x08
	require.NoError(t, os.WriteFile(seg, b, 0o644))
	return root, cwds, streams, events.SeqRange{First: bs[1].Header.FirstSeq, Last: bs[1].Header.LastSeq()}
}

func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || strings.HasSuffix(p, "-shm") || strings.HasSuffix(p, "-wal") {
			return err
		}
		b, err := os.ReadFile(p)
		out[p[len(dir):]] = string(b)
		return err
	}))
	return out
}

// TestSalvageCommand: salvage's help, its refusals (no stream, a wrong
// stream name, a stream that is not damaged, a root another process
// holds) change nothing; stats and verify show the damage; a dry run
// changes nothing; the salvage reports the lost seqs, after which
// verify and replay --verify pass and the stream takes events again.
func TestSalvageCommand(t *testing.T) {
	root, cwds, streams, lost := damagedRoot(t, false)

	code, out, _ := cli(t, "", "salvage", "--help")
	require.EqualValues(t, 0, code)
	require.Contains(t, out, "salvage [--dry-run] [--json] STREAM")
	require.Contains(t, out, "quarantine/STREAM.<time>/damaged/")

	before := treeOf(t, root)
	code, _, errs := cli(t, "", "--root", root, "salvage")
	require.NotEqualValues(t, 0, code)
	require.Contains(t, errs, "takes one STREAM")
	code, _, errs = cli(t, "", "--root", root, "salvage", "ws-nosuch")
	require.EqualValues(t, 1, code)
	require.Contains(t, errs, `no stream "ws-nosuch"`)
	require.Contains(t, errs, streams[1], "the error lists the streams")
	code, _, errs = cli(t, "", "--root", root, "salvage", "../log")
	require.EqualValues(t, 1, code)
	require.Contains(t, errs, `no stream "../log"`)
	code, _, errs = cli(t, "", "--root", root, "salvage", streams[1])
	require.EqualValues(t, 1, code)
	require.Contains(t, errs, "is not damaged")
	require.Contains(t, errs, "nothing was changed")
	require.Equal(t, before, treeOf(t, root), "a refused salvage changed the root")

	// The damage shows.
	code, out, errs = cli(t, "", "--root", root, "verify")
	require.EqualValues(t, 1, code)
	require.Contains(t, out, events.SegmentName(1)+" at offset ")
	require.Contains(t, errs, "dshmem salvage "+streams[0])
	code, out, errs = cli(t, "", "--root", root, "stats", "--json")
	require.EqualValues(t, 0, code, "%s", errs)
	var st rootStats
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Len(t, st.Quarantined, 1)
	require.Equal(t, streams[0], st.Quarantined[0].Stream)
	require.Contains(t, errs, "QUARANTINED")
	code, out, _ = cli(t, "", "--root", root, "stats")
	require.EqualValues(t, 0, code)
	require.Contains(t, out, "(QUARANTINED)")
	code, out, errs = cli(t, "", "--root", root, "search", "--cwd", cwds[1], "zebrafish")
	require.EqualValues(t, 0, code, "search beside a quarantined stream: %s", errs)
	require.Contains(t, out, "b says the zebrafish")
	code, out, errs = cli(t, "", "--root", root, "recall", "--timeout", "1m", "--cwd", cwds[2], "--kind", "episodic", "zebrafish parser")
	require.EqualValues(t, 0, code, "recall beside a quarantined stream: %s", errs)
	require.Contains(t, out, "c says the zebrafish")
	code, out, errs = cli(t, "", "--root", root, "sql", "--json", "select count(*) as n from events")
	require.EqualValues(t, 0, code, "sql beside a quarantined stream: %s", errs)
	require.Contains(t, out, `"n": 12`)
	code, _, errs = cli(t, "", "--root", root, "entries", "--json")
	require.EqualValues(t, 0, code, "entries beside a quarantined stream: %s", errs)
	code, _, errs = cli(t, "", "--root", root, "remember", "--cwd", cwds[0], "we deploy on fridays")
	require.EqualValues(t, 1, code)
	require.Contains(t, errs, "quarantined")
	require.Contains(t, errs, "dshmem salvage "+streams[0])
	code, _, errs = cli(t, "", "--root", root, "remember", "--cwd", cwds[1], "we deploy on mondays")
	require.EqualValues(t, 0, code, "remember into another stream: %s", errs)

	// A root another process holds is refused.
	eng, err := observer.Open(context.Background(), root, observer.Options{})
	require.NoError(t, err)
	held := treeOf(t, filepath.Join(root, observer.LogDir, streams[0]))
	code, _, errs = cli(t, "", "--root", root, "salvage", streams[0])
	require.EqualValues(t, 1, code)
	require.Contains(t, errs, fmt.Sprintf("process %d holds the root", os.Getpid()))
	require.Contains(t, errs, "nothing was changed")
	require.Equal(t, held, treeOf(t, filepath.Join(root, observer.LogDir, streams[0])))
	require.NoError(t, eng.Close())

	before = treeOf(t, root)
	code, out, errs = cli(t, "", "--root", root, "salvage", "--dry-run", "--json", streams[0])
	require.EqualValues(t, 0, code, "%s", errs)
	var rep events.SalvageReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "%s", out)
	require.Equal(t, []events.SeqRange{lost}, rep.Lost)
	require.True(t, rep.DryRun)
	require.Equal(t, before, treeOf(t, root), "a dry run changed the root")

	code, out, errs = cli(t, "", "--root", root, "salvage", streams[0])
	require.EqualValues(t, 0, code, "%s", errs)
	require.Contains(t, out, fmt.Sprintf("lost: 1 event, seqs %d", lost.First))
	require.Contains(t, out, "kept 3 whole batches")
	code, out, errs = cli(t, "", "--root", root, "verify")
	require.EqualValues(t, 0, code, "verify after salvage: %s %s", out, errs)
	require.Contains(t, out, fmt.Sprintf("seqs %d..%d lost to damage", lost.First, lost.Last))
	code, out, errs = cli(t, "", "--root", root, "replay", "--verify")
	require.EqualValues(t, 0, code, "replay --verify after salvage: %s %s", out, errs)
	in := fmt.Sprintf(`{"id":"after","type":"user/message","time":"2026-08-18T11:00:00Z","session":"s-a","cwd":%q,"data":{"text":"after"}}`+"\n", cwds[0])
	code, out, errs = cli(t, in, "--root", root, "ingest")
	require.EqualValues(t, 0, code, "%s", errs)
	require.Contains(t, out, `"appended":1`)
	code, out, _ = cli(t, "", "--root", root, "stats", "--json")
	require.EqualValues(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Empty(t, st.Quarantined)
}

// TestSalvageCrash kills a real `dshmem salvage` with SIGKILL at each of
// its durable steps, once it says READY there: afterwards the other
// streams read as before, and `dshmem salvage` again finishes the job
// (or, killed after it was done, says the stream is not damaged), after
// which the log verifies with exactly the lost seqs, replay --verify
// passes and the stream takes events.
func TestSalvageCrash(t *testing.T) {
	bin := buildDshmem(t)
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return code, out.String(), errb.String()
	}
	template, cwds, streams, lost := damagedRoot(t, true)
	for _, step := range []string{"written", "ready", "moved", "swapped", "dropped", "rebuilt"} {
		t.Run(step, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			copyTree(t, template, root)
			others := treeOf(t, filepath.Join(root, observer.LogDir, streams[1]))
			cmd := exec.Command(bin, "--root", root, "salvage", streams[0])
			cmd.Env = append(os.Environ(), salvagePauseEnv+"="+step)
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			sc := bufio.NewScanner(stderr)
			ready := false
			for sc.Scan() {
				if sc.Text() == "READY "+step {
					ready = true
					break
				}
			}
			require.True(t, ready, "the child never reached step %s", step)
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			cmd.Wait()

			require.Equal(t, others, treeOf(t, filepath.Join(root, observer.LogDir, streams[1])), "another stream changed")
			code, out, errs := run("--root", root, "search", "--cwd", cwds[1], "zebrafish")
			if step == "dropped" {
				// The index was dropped for its rebuild, which the next writer makes.
				require.EqualValues(t, 1, code)
				require.Contains(t, errs, "no index")
			} else {
				require.EqualValues(t, 0, code, "search after a kill at %s: %s", step, errs)
				require.Contains(t, out, "b says the zebrafish")
			}

			code, out, errs = run("--root", root, "salvage", "--json", streams[0])
			if step == "rebuilt" {
				require.EqualValues(t, 1, code, "%s", out)
				require.Contains(t, errs, "is not damaged", "killed once it was done, there is nothing left to salvage")
			} else {
				require.EqualValues(t, 0, code, "salvage again after a kill at %s: %s", step, errs)
				var rep events.SalvageReport
				require.NoError(t, json.Unmarshal([]byte(out), &rep), "%s", out)
				require.Equal(t, []events.SeqRange{lost}, rep.Lost)
				require.Equal(t, step != "written", rep.Resumed, "resumed")
			}
			code, out, errs = run("--root", root, "verify")
			require.EqualValues(t, 0, code, "verify: %s %s", out, errs)
			require.Contains(t, out, fmt.Sprintf("seqs %d..%d lost to damage", lost.First, lost.Last))
			code, out, errs = run("--root", root, "replay", "--verify")
			require.EqualValues(t, 0, code, "replay --verify after a kill at %s: %s %s", step, out, errs)
			in := fmt.Sprintf(`{"id":"after","type":"user/message","time":"2026-08-18T11:00:00Z","session":"s-a","cwd":%q,"data":{"text":"after"}}`+"\n", cwds[0])
			cmdIn := exec.Command(bin, "--root", root, "ingest")
			cmdIn.Stdin = strings.NewReader(in)
			b, err := cmdIn.CombinedOutput()
			require.NoError(t, err, "%s", b)
			require.Contains(t, string(b), `"appended":1`)
			dirs, _ := filepath.Glob(filepath.Join(root, observer.QuarantineDir, "*", "damaged"))
			require.Len(t, dirs, 1, "one copy of the damaged segments is kept")
		})
	}
}

// TestServeWithDamagedStream: `dshmem serve` starts on a root with a
// damaged stream; its walk of the log quarantines the stream, healthz
// lists it with segment and offset, answers that include it say so, a
// remember into it is refused (the message names salvage), one into
// another workspace is stored, and salvage refuses while serve holds
// the root.
func TestServeWithDamagedStream(t *testing.T) {
	bin := buildDshmem(t)
	root, cwds, streams, _ := damagedRoot(t, true)
	stop := startServe(t, bin, root)
	defer stop()
	info, err := httpapi.ReadServeFile(root)
	require.NoError(t, err)
	call := func(method, path, body string, v any) int {
		req, _ := http.NewRequest(method, "http://"+info.Addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+info.Token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if v != nil {
			require.NoError(t, json.Unmarshal(b, v), "%s", b)
		}
		return resp.StatusCode
	}
	var h httpapi.Health
	for { // until the background walk of the log has ended
		require.Equal(t, 200, call("GET", "/v1/healthz", "", &h))
		if h.Log != nil && h.Log.State != "running" {
			break
		}
	}
	require.Equal(t, "corrupt", h.Log.State)
	require.Len(t, h.Quarantined, 1, "%+v", h)
	q := h.Quarantined[0]
	require.Equal(t, streams[0], q.Stream)
	require.Equal(t, filepath.Join(root, observer.LogDir, streams[0], events.SegmentName(1)), q.Segment)
	require.NotZero(t, q.Offset)
	require.NotEmpty(t, q.Reason)

	var res struct {
		Items       []json.RawMessage `json:"items"`
		Quarantined []events.Damage   `json:"quarantined"`
	}
	require.Equal(t, 200, call("POST", "/v1/recall", fmt.Sprintf(`{"query":"zebrafish parser","cwd":%q,"kind":"all"}`, cwds[0]), &res))
	require.Len(t, res.Quarantined, 1, "a recall in the quarantined workspace says so")
	res.Quarantined = nil
	require.Equal(t, 200, call("POST", "/v1/recall", fmt.Sprintf(`{"query":"zebrafish parser","cwd":%q,"kind":"all"}`, cwds[1]), &res))
	require.Empty(t, res.Quarantined, "a recall elsewhere carries no flag")
	var ctxAns struct {
		Quarantined []events.Damage `json:"quarantined"`
	}
	require.Equal(t, 200, call("GET", "/v1/context?cwd="+cwds[0], "", &ctxAns))
	require.Len(t, ctxAns.Quarantined, 1)

	var e map[string]any
	code := call("POST", "/v1/remember", fmt.Sprintf(`{"content":"we deploy on fridays","cwd":%q}`, cwds[0]), &e)
	require.Equal(t, http.StatusServiceUnavailable, code, "a damaged stream is the server's condition, not a bad request")
	require.Contains(t, fmt.Sprint(e), "quarantined")
	require.Contains(t, fmt.Sprint(e), "dshmem salvage "+streams[0])
	require.Equal(t, 200, call("POST", "/v1/remember", fmt.Sprintf(`{"content":"we deploy on mondays","cwd":%q}`, cwds[1]), &e))

	code, _, errs := cli(t, "", "--root", root, "salvage", streams[0])
	require.EqualValues(t, 1, code)
	require.Contains(t, errs, "holds the root")
	require.Contains(t, errs, "stop it")
}
