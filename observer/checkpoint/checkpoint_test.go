package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/distill"
	"dshmem/observer/dsh"
	"dshmem/observer/internal/enginetest"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var ckT0 = time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)

// ckConv builds the intake lines of a conversation in one session; each
// turn is "role: text" (user, assistant, tool, injected) or an event
// type alone (task/end, session/end); turn i happens at ckT0 + i minutes.
type ckConv struct {
	session, cwd string
	n            int
	lines        [][]byte
}

func (c *ckConv) add(turns ...string) *ckConv {
	for _, turn := range turns {
		role, text, _ := strings.Cut(turn, ": ")
		typ, data := "", map[string]any{}
		switch role {
		case "user":
			typ, data["text"] = events.TypeUserMessage, text
		case "injected":
			typ, data["text"], data["injected"] = events.TypeUserMessage, text, true
		case "assistant":
			typ, data["text"] = events.TypeAssistantMessage, text
		case "tool":
			typ, data["name"], data["ok"], data["text"] = events.TypeToolResult, "read", true, text
		case events.TypeTaskEnd:
			typ, data["request"], data["result"], data["status"] = role, "", "", "done"
		case events.TypeSessionEnd:
			typ, data = role, nil
		default:
			panic("unknown turn " + turn)
		}
		env := events.Envelope{ID: fmt.Sprintf("%s:%d", c.session, c.n), Type: typ, Session: c.session, Cwd: c.cwd,
			Time: ckT0.Add(time.Duration(c.n) * time.Minute).Format(time.RFC3339)}
		if data != nil {
			env.Data, _ = json.Marshal(data)
		}
		line, err := events.Marshal(&env)
		if err != nil {
			panic(err)
		}
		c.lines = append(c.lines, line)
		c.n++
	}
	return c
}

func ckCheckpoint(t *testing.T, eng *observer.Engine, req Request) []Result {
	t.Helper()
	res, err := Run(context.Background(), eng, req)
	require.NoError(t, err)
	return res
}

// ckOpsEvents lists the memory/ops events of the index as "stream from-to nops".
func ckOpsEvents(t *testing.T, eng *observer.Engine) []string {
	t.Helper()
	evs, err := eng.Store().Events(context.Background(), sqlstore.EventFilter{Type: events.TypeMemoryOps})
	require.NoError(t, err)
	var out []string
	for _, ev := range evs {
		var ops payload.Ops
		require.NoError(t, payload.Unmarshal(ev.Data, &ops), "memory/ops %s", ev.ID)
		out = append(out, fmt.Sprintf("%s %d-%d %d", ev.Stream, ops.From, ops.To, len(ops.Ops)))
	}
	return out
}

func ckEntries(t *testing.T, eng *observer.Engine, status string) []observer.Entry {
	t.Helper()
	es, err := eng.Entries(context.Background(), observer.EntryFilter{Statuses: []string{status}})
	require.NoError(t, err)
	return es
}

// ckReplayDump folds the engine's log into a fresh index, without any
// distiller, and returns the dump lines of the live and the fresh index
// whose table is one of tables (all tables when none is given).
func ckReplayDump(t *testing.T, eng *observer.Engine, tables ...string) (live, fresh string) {
	t.Helper()
	keep := func(dump []byte) string {
		if len(tables) == 0 {
			return string(dump)
		}
		var b strings.Builder
		for _, l := range strings.SplitAfter(string(dump), "\n") {
			if table, _, _ := strings.Cut(l, "\t"); slices.Contains(tables, table) {
				b.WriteString(l)
			}
		}
		return b.String()
	}
	l, f := enginetest.IndexDumps(t, eng)
	return keep(l), keep(f)
}

// ckCheckReplay checks that replaying the log without a distiller gives
// the live index's tables (all when none are named) byte for byte.
func ckCheckReplay(t *testing.T, eng *observer.Engine, tables ...string) {
	t.Helper()
	live, fresh := ckReplayDump(t, eng, tables...)
	assert.Equal(t, fresh, live, "replay without a distiller differs from the live index:\nlive:\n%s\nreplayed:\n%s", live, fresh)
	assert.False(t, !strings.Contains(live, "entries\t") || !strings.Contains(live, "entry_versions\t"), "the dump holds no entries: the test proves nothing")
}

// TestCommitWritesPayloadOps: the memory/ops event of a checkpoint is
// payload.Ops as payload.Marshal encodes it, and decodes back into the
// result's checkpoint, range, distiller and ops.
func TestCommitWritesPayloadOps(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	c := &ckConv{session: "s1", cwd: "/home/u/shop"}
	enginetest.Ingest(t, eng, c.add("user: Remember that the API answers <json> & never HTML.", "assistant: Noted.").lines)
	res := ckCheckpoint(t, eng, Request{Force: true})
	require.Len(t, res, 1, "got %+v", res)
	require.Len(t, res[0].Ops, 1, "got %+v", res)
	var raw json.RawMessage
	require.NoError(t, eng.Log().Scan(res[0].Stream, 0, func(ev events.Envelope) error {
		if ev.Type == events.TypeMemoryOps {
			raw = ev.Data
		}
		return nil
	}))
	require.NotNil(t, raw, "no memory/ops event in %s", res[0].Stream)
	want := payload.Ops{Checkpoint: res[0].Checkpoint, Session: "s1", From: res[0].From, To: res[0].To,
		Distiller: distill.NewRules().Name(), Model: distill.RulesModel, Ops: res[0].Ops}
	var got payload.Ops
	require.NoError(t, payload.Unmarshal(raw, &got), "%s", raw)
	assert.Equal(t, want, got, "%s", raw)
	enc, err := payload.Marshal(want)
	require.NoError(t, err)
	assert.Equal(t, string(enc), string(raw), "got data %s, want payload.Marshal's bytes", raw)
}

func TestMySQLToPostgreSQL(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	c := &ckConv{session: "s1", cwd: "/home/u/shop"}
	enginetest.Ingest(t, eng, c.add("user: Remember that the database is MySQL 8.", "assistant: Noted.").lines)
	res := ckCheckpoint(t, eng, Request{Force: true})
	require.Len(t, res, 1, "first checkpoint: got %+v", res)
	require.Len(t, res[0].Ops, 1, "first checkpoint: got %+v", res)
	require.Equal(t, payload.OpAdd, res[0].Ops[0].Op, "first checkpoint: got %+v", res)
	require.Equal(t, ReasonRequest, res[0].Reason, "first checkpoint: got %+v", res)
	oldID := res[0].Entries[0]

	c.lines = nil
	enginetest.Ingest(t, eng, c.add("user: Not MySQL — we moved to PostgreSQL.", "assistant: Updating the config.").lines)
	res = ckCheckpoint(t, eng, Request{Force: true})
	require.Len(t, res, 1, "correction: got %+v", res)
	require.Len(t, res[0].Ops, 1, "correction: got %+v", res)
	require.Equal(t, payload.OpSupersede, res[0].Ops[0].Op, "correction: got %+v", res)
	assert.False(t, res[0].From != 4 || res[0].To != 5, "claimed %d..%d, want 4..5 (seq 3 is the first memory/ops event of the stream)", res[0].From, res[0].To)
	newID := res[0].Entries[0]

	active := ckEntries(t, eng, payload.StatusActive)
	require.Len(t, active, 1, "active entries: got %+v, want only %s", active, newID)
	require.Equal(t, newID, active[0].ID, "active entries: got %+v, want only %s", active, newID)
	require.Contains(t, active[0].Content, "PostgreSQL", "active entries: got %+v, want only %s", active, newID)
	require.Equal(t, oldID, active[0].Supersedes, "active entries: got %+v, want only %s", active, newID)
	old, err := eng.Entry(context.Background(), oldID)
	require.NoError(t, err, "old entry: got %+v, %v", old, err)
	require.Equal(t, payload.StatusSuperseded, old.Status, "old entry: got %+v, %v", old, err)
	require.Equal(t, newID, old.SupersededBy, "old entry: got %+v, %v", old, err)
	h, err := eng.History(context.Background(), oldID)
	require.NoError(t, err)
	assert.False(t, len(h) != 2 || h[0].Op != "add" || h[0].EventType != events.TypeMemoryOps || h[1].Op != "supersede" ||
		h[1].Status != payload.StatusSuperseded || h[1].Checkpoint != res[0].Checkpoint || !strings.Contains(h[0].Content, "MySQL 8"), "history of the old entry: got %+v", h)
	p, _ := Scan(context.Background(), eng)
	assert.Len(t, p, 0, "pending after checkpoints: %+v", p)
	ckCheckReplay(t, eng)
}

// ckFakeDistiller answers with a fixed result, or fails while fail > 0.
type ckFakeDistiller struct {
	mu    sync.Mutex
	calls int
	fail  int
	reqs  []distill.Request
	// answer builds the result from the request; nil answers nothing.
	answer func(distill.Request) distill.Result
	// wait, when set, is received from before answering.
	wait chan struct{}
}

func (f *ckFakeDistiller) Name() string  { return "fake" }
func (f *ckFakeDistiller) Model() string { return "fake-1" }
func (f *ckFakeDistiller) Distill(ctx context.Context, req distill.Request) (distill.Result, error) {
	f.mu.Lock()
	f.calls++
	f.reqs = append(f.reqs, req)
	failing := f.fail > 0
	if failing {
		f.fail--
	}
	f.mu.Unlock()
	if f.wait != nil {
		select {
		case <-f.wait:
		case <-ctx.Done():
			return distill.Result{}, ctx.Err()
		}
	}
	if failing {
		return distill.Result{}, errors.New("endpoint answered 503")
	}
	res := distill.Result{Version: 1}
	if f.answer != nil {
		res = f.answer(req)
	}
	return res, nil
}

// ckAddFirstUser answers with an add of the first user message's text.
func ckAddFirstUser(req distill.Request) distill.Result {
	for _, m := range req.Messages {
		if m.Role == distill.RoleUser && !m.Injected {
			return distill.Result{Version: 1, Operations: []distill.Op{{Op: payload.OpAdd, Type: "fact", Content: m.Text,
				EvidenceEventIDs: []string{m.EventID}}}}
		}
	}
	return distill.Result{Version: 1}
}

func TestCorrectionWithoutMatchingQuotesIsAConflict(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	c := &ckConv{session: "s1", cwd: "/home/u/shop"}
	enginetest.Ingest(t, eng, c.add("user: Remember that the database is MySQL 8.").lines)
	ckCheckpoint(t, eng, Request{Force: true})
	old := ckEntries(t, eng, payload.StatusActive)
	require.Len(t, old, 1, "got %d entries, want 1", len(old))
	enginetest.Ingest(t, eng, c.add("user: the database should be PostgreSQL").lines)
	fake := &ckFakeDistiller{answer: func(req distill.Request) distill.Result {
		return distill.Result{Version: 1, Operations: []distill.Op{{
			Op: payload.OpSupersede, TargetID: old[0].ID, OldQuote: "Oracle 19", NewQuote: "the database should be PostgreSQL",
			Content: "The database is PostgreSQL", EvidenceEventIDs: []string{req.Messages[0].EventID},
		}}}
	}}
	res := ckCheckpoint(t, eng, Request{Force: true, Distiller: fake})
	require.Len(t, res, 1, "got %+v", res)
	require.Len(t, res[0].Ops, 1, "got %+v", res)
	require.Equal(t, payload.OpConflict, res[0].Ops[0].Op, "got %+v", res)
	require.EqualValues(t, "fake", res[0].Distiller, "got %+v", res)
	require.Len(t, fake.reqs, 1, "the distiller was not given the entry to correct: %+v", fake.reqs)
	require.Len(t, fake.reqs[0].Related, 1, "the distiller was not given the entry to correct: %+v", fake.reqs)
	require.Equal(t, old[0].ID, fake.reqs[0].Related[0].ID, "the distiller was not given the entry to correct: %+v", fake.reqs)
	cs := ckEntries(t, eng, payload.StatusConflict)
	require.Len(t, cs, 2, "got %+v, want both entries in one conflict group", cs)
	require.NotEqualValues(t, "", cs[0].ConflictGroup, "got %+v, want both entries in one conflict group", cs)
	require.Equal(t, cs[1].ConflictGroup, cs[0].ConflictGroup, "got %+v, want both entries in one conflict group", cs)
	got := ckEntries(t, eng, payload.StatusActive)
	assert.Len(t, got, 0, "active entries: %+v", got)
	ckCheckReplay(t, eng)
}

func TestDuplicateMessagesDistilOnce(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	c := (&ckConv{session: "s1", cwd: "/p"}).add("user: remember that builds need Go 1.26", "assistant: ok")
	enginetest.Ingest(t, eng, c.lines)
	res := enginetest.Ingest(t, eng, c.lines)
	require.EqualValues(t, 2, res.Duplicates, "got %+v, want 2 duplicates", res)
	ckCheckpoint(t, eng, Request{Force: true})
	enginetest.Ingest(t, eng, c.lines) // re-sent after the checkpoint
	if res := ckCheckpoint(t, eng, Request{Force: true}); len(res) != 0 {
		t.Errorf("second checkpoint: got %+v, want nothing pending", res)
	}
	got := ckOpsEvents(t, eng)
	assert.Len(t, got, 1, "memory/ops events: %q, want one", got)
	if got := ckEntries(t, eng, payload.StatusActive); len(got) != 1 {
		t.Errorf("got %d entries, want 1", len(got))
	}
}

func TestRestartResumesPendingWork(t *testing.T) {
	root := t.TempDir()
	eng, err := observer.Open(context.Background(), root, observer.Options{})
	require.NoError(t, err)
	enginetest.Ingest(t, eng, (&ckConv{session: "s1", cwd: "/p"}).add("user: remember that staging is on port 5433", "assistant: ok").lines)

	// A checkpoint dies mid-distillation: nothing is written.
	ctx, cancel := context.WithCancel(context.Background())
	fake := &ckFakeDistiller{wait: make(chan struct{}), answer: ckAddFirstUser}
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, eng, Request{Force: true, Distiller: fake})
		done <- err
	}()
	for {
		fake.mu.Lock()
		n := fake.calls
		fake.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	require.NoError(t, eng.Close())

	eng = enginetest.Open(t, root)
	p, err := Scan(context.Background(), eng)
	require.NoError(t, err)
	require.Len(t, p, 1, "pending after restart: %+v", p)
	require.EqualValues(t, 1, p[0].UserTurns, "pending after restart: %+v", p)
	require.EqualValues(t, 1, p[0].From, "pending after restart: %+v", p)
	require.EqualValues(t, 2, p[0].To, "pending after restart: %+v", p)
	ckCheckpoint(t, eng, Request{Force: true})
	ckCheckpoint(t, eng, Request{Force: true})
	got := ckOpsEvents(t, eng)
	assert.False(t, len(got) != 1 || got[0] != observer.StreamForCwd("/p")+" 1-2 1", "memory/ops events: %q, want exactly one claiming 1-2 with one op", got)
}

func TestDistillerFailsTwiceThenSucceeds(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	enginetest.Ingest(t, eng, (&ckConv{session: "s1", cwd: "/p"}).add("user: remember that we deploy on Fridays", "session/end").lines)
	fake := &ckFakeDistiller{fail: 2, answer: ckAddFirstUser}
	for i := range 2 {
		res := ckCheckpoint(t, eng, Request{Distiller: fake}) // session/end: due without Force
		require.Len(t, res, 1, "attempt %d: got %+v, want a distiller error", i+1, res)
		require.NotNil(t, res[0].Err, "attempt %d: got %+v, want a distiller error", i+1, res)
		require.EqualValues(t, "", res[0].Checkpoint, "attempt %d: got %+v, want a distiller error", i+1, res)
		require.Equal(t, ReasonSessionEnd, res[0].Reason, "attempt %d: got %+v, want a distiller error", i+1, res)
		got := ckOpsEvents(t, eng)
		require.Len(t, got, 0, "attempt %d: memory/ops written after a failure: %q", i+1, got)
		if got := ckEntries(t, eng, payload.StatusActive); len(got) != 0 {
			t.Fatalf("attempt %d: entries written after a failure: %+v", i+1, got)
		}
		p, _ := Scan(context.Background(), eng)
		require.Len(t, p, 1, "attempt %d: the range is no longer pending: %+v", i+1, p)
	}
	res := ckCheckpoint(t, eng, Request{Distiller: fake})
	require.Len(t, res, 1, "third attempt: got %+v", res)
	require.Nil(t, res[0].Err, "third attempt: got %+v", res)
	require.NotEqualValues(t, "", res[0].Checkpoint, "third attempt: got %+v", res)
	assert.False(t, !strings.HasPrefix(res[0].Checkpoint, "ck-") || len(res[0].Checkpoint) != 19, "checkpoint id %q", res[0].Checkpoint)
	got := ckOpsEvents(t, eng)
	assert.Len(t, got, 1, "memory/ops events: %q, want one", got)
	if got := ckEntries(t, eng, payload.StatusActive); len(got) != 1 {
		t.Errorf("got %d entries, want 1", len(got))
	}
	if res := ckCheckpoint(t, eng, Request{Distiller: fake}); len(res) != 0 || fake.calls != 3 {
		t.Errorf("after success: got %+v and %d calls, want nothing more", res, fake.calls)
	}
}

func TestConcurrentCheckpointsCommitOnce(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	enginetest.Ingest(t, eng, (&ckConv{session: "s1", cwd: "/p"}).add("user: remember that the cache is Redis").lines)
	fake := &ckFakeDistiller{wait: make(chan struct{}), answer: ckAddFirstUser}
	var wg sync.WaitGroup
	results := make([][]Result, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = Run(context.Background(), eng, Request{Force: true, Distiller: fake})
		}()
	}
	// Let both distil at once: release them when both have claimed.
	var released atomic.Bool
	for !released.Load() {
		fake.mu.Lock()
		if fake.calls == 2 {
			close(fake.wait)
			released.Store(true)
		}
		fake.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	committed, dup := 0, 0
	for _, rs := range results {
		for _, r := range rs {
			if r.Checkpoint != "" {
				committed++
			}
			if r.Duplicate {
				dup++
			}
		}
	}
	assert.False(t, committed != 1 || dup != 1, "got %d committed and %d duplicate, want 1 and 1: %+v", committed, dup, results)
	got := ckOpsEvents(t, eng)
	assert.Len(t, got, 1, "memory/ops events: %q, want one", got)
}

func TestCheckpointLongSessionInRanges(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	c := &ckConv{session: "s1", cwd: "/p"}
	long := strings.Repeat("word ", 2000) // 10,000 runes
	for _, fact := range []string{
		"invoices are archived monthly", "Zoltan reviews database migrations", "the staging cluster runs in Frankfurt",
		"release tags are signed with GPG", "Kafka retention is seven days",
	} {
		c.add("user: remember that " + fact + ". " + long)
	}
	enginetest.Ingest(t, eng, c.lines)
	res := ckCheckpoint(t, eng, Request{}) // 50,000 chars: due
	require.Len(t, res, 2, "got %d results, want 2 ranges: %+v", len(res), res)
	require.Equal(t, ReasonChars, res[0].Reason, "got %d results, want 2 ranges: %+v", len(res), res)
	assert.False(t, res[0].From != 1 || res[0].To != 3 || res[1].From != 4 || res[1].To != 5, "ranges %d..%d and %d..%d, want 1..3 and 4..5", res[0].From, res[0].To, res[1].From, res[1].To)
	n := len(ckEntries(t, eng, payload.StatusActive))
	assert.EqualValues(t, 5, n, "got %d entries, want one per message (5)", n)
}

func TestSubagentSessionInItsScope(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	sub := &ckConv{session: "child", cwd: "/work/lib"}
	start := events.Envelope{ID: "child:start", Type: events.TypeSessionStart, Session: "child", Cwd: "/work/lib",
		Time: ckT0.Format(time.RFC3339), Data: json.RawMessage(`{"origin":"subagent","parent":"top"}`)}
	line, _ := events.Marshal(&start)
	enginetest.Ingest(t, eng, append([][]byte{line}, sub.add("user: remember that lib uses semver tags", "task/end").lines...))
	res := ckCheckpoint(t, eng, Request{}) // task/end: due
	require.Len(t, res, 1, "got %+v", res)
	require.Equal(t, ReasonTaskEnd, res[0].Reason, "got %+v", res)
	require.Equal(t, observer.StreamForCwd("/work/lib"), res[0].Stream, "got %+v", res)
	es := ckEntries(t, eng, payload.StatusActive)
	assert.False(t, len(es) != 1 || es[0].Scope != observer.StreamForCwd("/work/lib"), "got %+v, want one entry in the sub-agent's scope", es)
}

func TestCrossScopeTargetBecomesAdd(t *testing.T) {
	req := distill.Request{Stream: "ws-a", Related: []distill.Entry{{ID: "m-g", Scope: observer.GlobalStream}, {ID: "m-a", Scope: "ws-a"}}}
	ops := []distill.Op{
		{Op: payload.OpSupersede, TargetID: "m-g", OldQuote: "x", Content: "new"},
		{Op: payload.OpRevise, TargetID: "m-a", Content: "own"},
		{Op: payload.OpForget, TargetID: "m-g"},
	}
	got, rejected := ownScope(req, ops, nil)
	assert.False(t, len(got) != 2 || got[0].Op != payload.OpAdd || got[0].TargetID != "" || got[0].OldQuote != "" || got[1].Op != payload.OpRevise, "got %+v", got)
	assert.False(t, len(rejected) != 1 || !strings.Contains(rejected[0].Why, "dshmem forget m-g"), "rejected %+v", rejected)
}

// ckDSHLines reads the DSH fixtures (every file dsh.FindSessions lists,
// with dsh.ReadFile, as the importer reads them) and returns their
// envelopes as intake lines, placeholders filled in (each file its own
// session and workspace). With asUser, injected user messages are marked
// as typed by the user: the control that shows the fixtures hold
// injected text the rules distiller would learn from.
func ckDSHLines(t *testing.T, asUser bool) [][]byte {
	t.Helper()
	paths, err := dsh.FindSessions(filepath.Join("..", "..", "testdata", "dsh-sessions"))
	require.NoError(t, err, "find fixtures")
	require.False(t, len(paths) < 5, "read fixtures: %d sessions", len(paths))
	var lines [][]byte
	for _, p := range paths {
		s, err := dsh.ReadFile(p)
		require.NoError(t, err, "read fixture %s", p)
		name := strings.TrimSuffix(filepath.Base(s.Path), filepath.Ext(s.Path))
		fill := strings.NewReplacer("{{sessionId}}", "session-"+name, "{{cwd}}", "/home/u/"+name)
		for _, env := range s.Events {
			env.ID, env.Session, env.Cwd = fill.Replace(env.ID), fill.Replace(env.Session), fill.Replace(env.Cwd)
			if asUser && env.Type == events.TypeUserMessage {
				var d map[string]any
				if json.Unmarshal(env.Data, &d) == nil && d["injected"] == true {
					d["injected"] = false
					env.Data, _ = json.Marshal(d)
				}
			}
			line, err := events.Marshal(&env)
			require.NoError(t, err)
			lines = append(lines, line)
		}
	}
	return lines
}

func TestRulesLearnNothingInjectedFromDSHFixtures(t *testing.T) {
	ctx := context.Background()
	eng := enginetest.Open(t, t.TempDir())
	enginetest.Ingest(t, eng, ckDSHLines(t, false))
	res := ckCheckpoint(t, eng, Request{Force: true})
	require.False(t, len(res) < 5, "got %d checkpoints, want one per fixture session with user text", len(res))
	ops := 0
	for _, r := range res {
		for _, o := range r.Ops {
			ops++
			for _, id := range o.EvidenceEventIDs {
				evs, err := eng.Store().Events(ctx, sqlstore.EventFilter{Stream: r.Stream, ID: id})
				require.NoError(t, err)
				if !assert.Len(t, evs, 1, "op %q rests on %s, which is not an event of %s", o.Title, id, r.Stream) {
					continue
				}
				typ := evs[0].Type
				var m payload.UserMessage
				err = payload.Unmarshal(evs[0].Data, &m)
				assert.False(t, err != nil || typ != events.TypeUserMessage || m.Injected, "op %q rests on %s (%s, injected %v, %v): not a message the user typed", o.Title, id, typ, m.Injected, err)
			}
		}
	}
	// The one statement of the fixtures worth remembering, typed by the
	// user in the live session.
	es := ckEntries(t, eng, payload.StatusActive)
	assert.False(t, ops != len(es) || len(es) != 1 || !strings.Contains(es[0].Content, "PostgreSQL 16"), "got %d ops and entries %+v, want the one remembered database", ops, es)
	// The entries, compared byte for byte. (The whole dump is not: the
	// fixtures hold '<' and '&', which the log's writer stores
	// HTML-escaped while the live fold keeps them as sent, so
	// events.data differs — an events-layer issue, reported; the
	// entries do not depend on it.)
	ckCheckReplay(t, eng, "entries", "entries_fts", "entry_versions")

	control := enginetest.Open(t, t.TempDir())
	enginetest.Ingest(t, control, ckDSHLines(t, true))
	ckCheckpoint(t, control, Request{Force: true})
	n := len(ckEntries(t, control, payload.StatusActive))
	assert.False(t, n <= len(es), "control: injected text taken as the user's gives %d entries, no more than %d: the fixtures do not test injection", n, len(es))
}
