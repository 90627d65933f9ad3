package checkpoint

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/internal/enginetest"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gcChildEnv makes the test binary a checkpoint writer that is killed
// between its global evidence and its own event (TestGlobalEvidenceKill9).
const gcChildEnv = "DSHMEM_GLOBALCONF_CHILD"

func TestMain(m *testing.M) {
	if root := os.Getenv(gcChildEnv); root != "" {
		gcChild(root)
		return
	}
	os.Exit(m.Run())
}

// gcChild opens root, runs a checkpoint, and at the crash point says
// "ready" and waits to be killed.
func gcChild(root string) {
	eng, err := observer.Open(context.Background(), root, observer.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	afterGlobalCommit = func() {
		fmt.Println("ready")
		select {} // killed here
	}
	_, err = Run(context.Background(), eng, Request{Force: true})
	fmt.Fprintln(os.Stderr, "the checkpoint ended without reaching the crash point:", err)
	os.Exit(3)
}

// gcLines are intake lines of session in cwd: each turn is
// "type data-json", at 2026-08-18T<hour>:MM:00Z from minute 1 on; the
// ids are session:N counting from first.
func gcLines(session, cwd string, hour, first int, turns ...string) [][]byte {
	var out [][]byte
	for i, turn := range turns {
		typ, data, _ := strings.Cut(turn, " ")
		l := fmt.Sprintf(`{"id":"%s:%d","type":%q,"time":"2026-08-18T%02d:%02d:00Z","session":%q,"cwd":%q,"data":%s}`,
			session, first+i, typ, hour, first+i+1, session, cwd, data)
		out = append(out, []byte(l))
	}
	return out
}

// gcGlobal remembers one global entry (confidence 1) and returns it.
func gcGlobal(t *testing.T, eng *observer.Engine) observer.Entry {
	t.Helper()
	rem := `{"id":"g:0","type":"memory/remember","time":"2026-08-18T00:00:00Z","data":{"content":"The API listens on port 8080."}}`
	enginetest.Ingest(t, eng, [][]byte{[]byte(rem)})
	g := evOnlyEntry(t, eng)
	require.Equal(t, observer.GlobalStream, g.Scope, "the remembered entry: %+v", g)
	require.Equal(t, 1.0, g.Confidence)
	return g
}

func gcEntry(t *testing.T, eng *observer.Engine, id string) observer.Entry {
	t.Helper()
	es, err := eng.Entries(context.Background(), observer.EntryFilter{})
	require.NoError(t, err)
	for _, e := range es {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("entry %s is not in the index", id)
	return observer.Entry{}
}

// gcOpsEvents returns the memory/ops events of stream.
func gcOpsEvents(t *testing.T, eng *observer.Engine, stream string) []sqlstore.Event {
	t.Helper()
	evs, err := eng.Store().Events(context.Background(), sqlstore.EventFilter{Type: events.TypeMemoryOps})
	require.NoError(t, err)
	var out []sqlstore.Event
	for _, ev := range evs {
		if ev.Stream == stream {
			out = append(out, ev)
		}
	}
	return out
}

// gcFailure is a workspace session in which global entry id is shown and
// the deploy that follows fails.
func gcFailure(session, cwd, id string, hour int) [][]byte {
	return gcLines(session, cwd, hour, 0,
		`session/start {"origin":"top"}`,
		`user/message {"text":"deploy the api"}`,
		`memory/shown {"entries":["`+id+`"],"mode":"hint"}`,
		`assistant/message {"text":"Deploying to port 8080."}`,
		`tool/call {"name":"bash","args":{"command":"./deploy.sh --port 8080"},"callId":"c1"}`,
		`tool/result {"name":"bash","ok":false,"text":"error: exit 1"}`,
	)
}

// TestGlobalEntryConfidenceFromWorkspaceSessions: a global entry shown
// in a workspace session before a failed tool call loses confidence;
// shown in a session of another workspace it is reused (+0.05), and the
// user's confirmation raises it (+0.10). Each change is a confidence op
// of a memory/ops event in the global stream, with provenance evidence
// and evidence ids that name the workspace stream; none is an op of the
// workspace's event; a fold alone changes nothing; replay agrees.
func TestGlobalEntryConfidenceFromWorkspaceSessions(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	g := gcGlobal(t, eng)
	shop, blog := observer.StreamForCwd("/home/u/shop"), observer.StreamForCwd("/home/u/blog")

	enginetest.Ingest(t, eng, append(gcFailure("a1", "/home/u/shop", g.ID, 1), gcLines("a1", "/home/u/shop", 1, 6, `session/end {}`)...))
	assert.Equal(t, 1.0, gcEntry(t, eng, g.ID).Confidence, "folded without a checkpoint")
	res := ckCheckpoint(t, eng, Request{Force: true})
	assert.InDelta(t, 0.8, gcEntry(t, eng, g.ID).Confidence, 1e-9, "after the failed deploy's checkpoint")
	require.Len(t, res, 1)
	for _, o := range res[0].Ops {
		assert.NotEqual(t, payload.OpConfidence, o.Op, "the workspace's own event holds a confidence op: %+v", o)
	}
	require.Len(t, res[0].GlobalOps, 1, "global ops: %+v", res[0].GlobalOps)
	glob := gcOpsEvents(t, eng, observer.GlobalStream)
	require.Len(t, glob, 1, "memory/ops events of global")
	assert.Equal(t, globalEventID(shop, "a1", res[0].From), glob[0].ID)
	var d payload.Ops
	require.NoError(t, payload.Unmarshal(glob[0].Data, &d))
	assert.Equal(t, res[0].Checkpoint, d.Checkpoint, "the global event names the checkpoint")
	assert.Empty(t, d.Session, "the global event is no claim of the global stream")
	require.Len(t, d.Ops, 1)
	o := d.Ops[0]
	assert.Equal(t, payload.OpConfidence, o.Op)
	assert.Equal(t, g.ID, o.TargetID)
	assert.Equal(t, payload.ProvenanceEvidence, o.Provenance)
	assert.Equal(t, []string{shop + "/a1:2", shop + "/a1:5"}, o.EvidenceEventIDs, "the evidence: the showing and the failed result, named with their stream")

	// Another workspace: reused, then confirmed.
	enginetest.Ingest(t, eng, gcLines("b1", "/home/u/blog", 2, 0,
		`session/start {"origin":"top"}`,
		`user/message {"text":"which port does the api use"}`,
		`memory/shown {"entries":["`+g.ID+`"],"mode":"hint"}`,
		`assistant/message {"text":"8080."}`,
		`user/message {"text":"yes, that's right"}`,
		`session/end {}`,
	))
	assert.InDelta(t, 0.8, gcEntry(t, eng, g.ID).Confidence, 1e-9, "folded without a checkpoint")
	ckCheckpoint(t, eng, Request{Force: true})
	assert.InDelta(t, 0.95, gcEntry(t, eng, g.ID).Confidence, 1e-9, "after reuse and confirmation in %s", blog)

	h, err := eng.History(context.Background(), g.ID)
	require.NoError(t, err)
	var reasons []string
	for _, v := range h[1:] {
		require.Equal(t, payload.OpConfidence, v.Op, "version %d", v.Version)
		reasons = append(reasons, strings.SplitN(v.Reason, ":", 2)[0])
		assert.Contains(t, v.Reason, "evidence ws-", "version %d names no workspace event: %q", v.Version, v.Reason)
	}
	assert.Equal(t, []string{"tool-failure", "confirmation", "reuse"}, reasons)
	assert.Len(t, gcOpsEvents(t, eng, observer.GlobalStream), 2)
	ckCheckReplay(t, eng)
}

// TestGlobalReuseNeedsAnEarlierShowing: a global entry's first showing
// in a session is a reuse when a session of another workspace was shown
// it at an earlier event time (seqs are per stream; time orders showings
// across streams), not when every other showing is later, even if those
// were indexed first; a second showing in the same session is none.
func TestGlobalReuseNeedsAnEarlierShowing(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	g := gcGlobal(t, eng)
	// b1 in blog is shown the entry at 03:03, after a1 in shop (02:03)
	// was, but is ingested and checkpointed first.
	show := func(session, cwd string, hour int) [][]byte {
		return gcLines(session, cwd, hour, 0,
			`session/start {"origin":"top"}`,
			`user/message {"text":"which port does the api use"}`,
			`memory/shown {"entries":["`+g.ID+`"],"mode":"hint"}`,
			`memory/shown {"entries":["`+g.ID+`"],"mode":"hint"}`,
			`session/end {}`)
	}
	enginetest.Ingest(t, eng, show("b1", "/home/u/blog", 3))
	ckCheckpoint(t, eng, Request{Force: true})
	assert.Equal(t, 1.0, gcEntry(t, eng, g.ID).Confidence, "b1 alone, shown twice: no reuse")
	// c1 in shop, shown at 04:03, after b1: a reuse, and its deploy fails.
	enginetest.Ingest(t, eng, gcFailure("c1", "/home/u/shop", g.ID, 4))
	ckCheckpoint(t, eng, Request{Force: true})
	assert.InDelta(t, 0.85, gcEntry(t, eng, g.ID).Confidence, 1e-9, "c1: -0.20 +0.05")
	h, err := eng.History(context.Background(), g.ID)
	require.NoError(t, err)
	var reasons []string
	for _, v := range h[1:] {
		reasons = append(reasons, strings.SplitN(v.Reason, ":", 2)[0])
	}
	assert.Equal(t, []string{"tool-failure", "reuse"}, reasons)

	// a1 at 02:03 precedes every other showing: no reuse.
	before := gcEntry(t, eng, g.ID).Confidence
	enginetest.Ingest(t, eng, show("a1", "/home/u/docs", 2))
	ckCheckpoint(t, eng, Request{Force: true})
	assert.Equal(t, before, gcEntry(t, eng, g.ID).Confidence, "a showing earlier than every other one is no reuse")
	ckCheckReplay(t, eng)
}

// errCrash is the panic of the in-process crash point.
type errCrash struct{}

// TestGlobalEvidenceRetryCountsOnce: a checkpoint that stops after its
// global evidence and before its own event (a panic at the crash point)
// leaves the range pending; more events arrive; the retry claims the
// same range (cut at the global event's end), its global event is a
// duplicate, its own event lands, and the next range is judged by the
// next claim: the entry lost 0.2 twice, for two failures, never three
// times and never once.
func TestGlobalEvidenceRetryCountsOnce(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	g := gcGlobal(t, eng)
	shop := observer.StreamForCwd("/home/u/shop")
	enginetest.Ingest(t, eng, gcFailure("a1", "/home/u/shop", g.ID, 1))

	func() {
		afterGlobalCommit = func() { panic(errCrash{}) }
		defer func() {
			afterGlobalCommit = nil
			_, ok := recover().(errCrash)
			require.True(t, ok, "the checkpoint did not reach the crash point")
		}()
		_, _ = Run(context.Background(), eng, Request{Force: true})
	}()
	assert.Len(t, gcOpsEvents(t, eng, observer.GlobalStream), 1, "the global evidence")
	assert.Empty(t, gcOpsEvents(t, eng, shop), "the checkpoint's own event")
	assert.InDelta(t, 0.8, gcEntry(t, eng, g.ID).Confidence, 1e-9)

	// The same session goes on: shown again, fails again.
	enginetest.Ingest(t, eng, gcLines("a1", "/home/u/shop", 1, 6,
		`user/message {"text":"deploy it again"}`,
		`memory/shown {"entries":["`+g.ID+`"],"mode":"hint"}`,
		`tool/result {"name":"bash","ok":false,"text":"error: exit 1"}`,
		`session/end {}`))
	res := ckCheckpoint(t, eng, Request{Force: true})
	assert.InDelta(t, 0.6, gcEntry(t, eng, g.ID).Confidence, 1e-9, "two failures, each counted once: %+v", res)
	own := gcOpsEvents(t, eng, shop)
	require.Len(t, own, 2, "the checkpoint's own events: %+v", res)
	var first payload.Ops
	require.NoError(t, payload.Unmarshal(own[0].Data, &first))
	var glob payload.Ops
	require.NoError(t, payload.Unmarshal(gcOpsEvents(t, eng, observer.GlobalStream)[0].Data, &glob))
	assert.Equal(t, [2]uint64{glob.From, glob.To}, [2]uint64{first.From, first.To}, "the retry claimed the range of the global evidence")
	assert.Len(t, gcOpsEvents(t, eng, observer.GlobalStream), 2)
	ckCheckReplay(t, eng)
}

// TestGlobalEvidenceKill9: a real checkpoint writer is killed with
// SIGKILL after its global evidence is durable and before its own event
// is written (it says "ready" at that point and waits). Reopened, the
// log holds the global evidence once and the range is still pending; the
// retry commits the checkpoint without counting the failure again, and
// the index equals a replay of the log.
func TestGlobalEvidenceKill9(t *testing.T) {
	root := t.TempDir()
	var gid string
	func() {
		eng := enginetest.Open(t, root)
		gid = gcGlobal(t, eng).ID
		enginetest.Ingest(t, eng, append(gcFailure("a1", "/home/u/shop", gid, 1), gcLines("a1", "/home/u/shop", 1, 6, `session/end {}`)...))
		require.NoError(t, eng.Close())
	}()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), gcChildEnv+"="+root)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		require.True(t, ok, "the child ended before the crash point: %s", stderr.String())
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("no ready from the child within 2m: %s", stderr.String())
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal(), "the child was not killed: %v %s", err, stderr.String())

	eng := enginetest.Open(t, root)
	shop := observer.StreamForCwd("/home/u/shop")
	require.Len(t, gcOpsEvents(t, eng, observer.GlobalStream), 1, "the global evidence survived the kill")
	require.Empty(t, gcOpsEvents(t, eng, shop), "the checkpoint's own event was never written")
	assert.InDelta(t, 0.8, gcEntry(t, eng, gid).Confidence, 1e-9, "after the kill")
	ps, err := Scan(context.Background(), eng)
	require.NoError(t, err)
	require.Len(t, ps, 1, "pending after the kill: %+v", ps)

	res := ckCheckpoint(t, eng, Request{Force: true})
	require.Len(t, res, 1)
	assert.NotEmpty(t, res[0].Checkpoint, "the retry committed: %+v", res[0])
	assert.Empty(t, res[0].GlobalOps, "the retry appended global evidence again: %+v", res[0].GlobalOps)
	assert.InDelta(t, 0.8, gcEntry(t, eng, gid).Confidence, 1e-9, "the failure counted once")
	assert.Len(t, gcOpsEvents(t, eng, observer.GlobalStream), 1)
	assert.Len(t, gcOpsEvents(t, eng, shop), 1)
	ps, err = Scan(context.Background(), eng)
	require.NoError(t, err)
	assert.Empty(t, ps, "pending after the retry")
	ckCheckReplay(t, eng)
}

// TestGlobalEvidenceRacingCheckpoints: checkpoint A claims a session's
// events before a global entry is shown and fails; B claims them after,
// the same first seq and a longer range. A commits first (no global
// evidence); B must then commit nothing, not the global evidence of its
// longer range (which the next claim, from A's end on, judges again):
// the failure counts once.
func TestGlobalEvidenceRacingCheckpoints(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	g := gcGlobal(t, eng)
	lines := gcFailure("a1", "/home/u/shop", g.ID, 1)
	enginetest.Ingest(t, eng, lines[:2])

	run := func(f *ckFakeDistiller) (chan []Result, chan error) {
		res, errc := make(chan []Result, 1), make(chan error, 1)
		go func() {
			r, err := Run(context.Background(), eng, Request{Force: true, Distiller: f})
			res <- r
			errc <- err
		}()
		for { // until it has claimed: its distiller was called
			f.mu.Lock()
			n := f.calls
			f.mu.Unlock()
			if n > 0 {
				return res, errc
			}
			time.Sleep(time.Millisecond)
		}
	}
	fa := &ckFakeDistiller{wait: make(chan struct{})}
	resA, errA := run(fa)
	// A user turn after the failure: work without one is never due.
	enginetest.Ingest(t, eng, append(lines[2:], gcLines("a1", "/home/u/shop", 1, 6,
		`user/message {"text":"I will look at the logs later"}`, `session/end {}`)...))
	fb := &ckFakeDistiller{wait: make(chan struct{})}
	resB, errB := run(fb)
	close(fa.wait)
	require.NoError(t, <-errA)
	a := <-resA
	close(fb.wait)
	require.NoError(t, <-errB)
	b := <-resB
	require.True(t, len(a) > 0 && a[0].Checkpoint != "" && len(b) > 0 && b[0].Duplicate, "A: %+v\nB: %+v", a, b)
	assert.Empty(t, b[0].GlobalOps, "B committed global evidence: %+v", b[0])

	ckCheckpoint(t, eng, Request{Force: true})
	assert.InDelta(t, 0.8, gcEntry(t, eng, g.ID).Confidence, 1e-9, "the failure counted once")
	assert.Len(t, gcOpsEvents(t, eng, observer.GlobalStream), 1)
	ckCheckReplay(t, eng)
}

// TestQuarantinedGlobalDoesNotHoldUpCheckpoints: with the global stream
// quarantined (a flipped byte in its second batch), a workspace
// session's checkpoint still commits; the evidence for the global entry
// is reported rejected, naming the salvage, and nothing moves.
func TestQuarantinedGlobalDoesNotHoldUpCheckpoints(t *testing.T) {
	root := t.TempDir()
	var gid string
	func() {
		eng := enginetest.Open(t, root)
		gid = gcGlobal(t, eng).ID
		enginetest.Ingest(t, eng, [][]byte{[]byte(`{"id":"g:1","type":"memory/remember","time":"2026-08-18T00:00:01Z","data":{"content":"Answers are short."}}`)})
		require.NoError(t, eng.Close())
	}()
	dir := filepath.Join(root, observer.LogDir, observer.GlobalStream)
	segs, err := filepath.Glob(filepath.Join(dir, "*.jsonl.zst"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	f, err := os.Open(segs[0])
	require.NoError(t, err)
	var batches []events.Batch
	for r := events.NewReader(f); ; {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		batches = append(batches, b)
	}
	f.Close()
	require.Len(t, batches, 2)
	raw, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	raw[(batches[1].Offset+batches[1].End)/2] ^= 0x10
	require.NoError(t, os.WriteFile(segs[0], raw, 0o644))
	require.NoError(t, os.Remove(filepath.Join(root, "index.db")))

	eng := enginetest.Open(t, root)
	q := eng.Quarantined()
	require.True(t, len(q) == 1 && q[0].Stream == observer.GlobalStream, "quarantined: %+v", q)
	enginetest.Ingest(t, eng, append(gcFailure("a1", "/home/u/shop", gid, 1), gcLines("a1", "/home/u/shop", 1, 6, `session/end {}`)...))
	res := ckCheckpoint(t, eng, Request{Force: true})
	require.Len(t, res, 1)
	assert.NotEmpty(t, res[0].Checkpoint, "the workspace's checkpoint: %+v", res[0])
	require.Len(t, res[0].Rejected, 1, "rejected: %+v", res[0].Rejected)
	assert.Contains(t, res[0].Rejected[0].Why, "dshmem salvage global")
	assert.Equal(t, 1.0, gcEntry(t, eng, gid).Confidence)
	ps, err := Scan(context.Background(), eng)
	require.NoError(t, err)
	assert.Empty(t, ps, "pending after the checkpoint")
}
