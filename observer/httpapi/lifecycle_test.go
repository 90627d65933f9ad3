package httpapi

import (
	"dshmem/observer"
	"dshmem/observer/broker"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPromptPacket(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	const cwd = "/work/prompt"
	var en observer.Entry
	ts.must(200, "POST", "/v1/remember", map[string]any{"content": "When the billing migration fails with a lock timeout, rerun it with --lock-wait 60",
		"cwd": cwd, "type": "fix", "importance": 3}, &en)

	t.Run("ServedForANewSession", func(t *testing.T) {
		var p broker.Packet
		ts.must(200, "POST", "/v1/sessions/p1/prompt", map[string]any{"text": "the billing migration fails with a lock timeout", "cwd": cwd, "step": 1}, &p)
		require.NotEqualValues(t, 0, len(p.Entries), "got %+v, want a packet holding %s", p, en.ID)
		require.Equal(t, en.ID, p.Entries[0].ID, "got %+v, want a packet holding %s", p, en.ID)
		require.Contains(t, p.Text, "--lock-wait 60", "got %+v, want a packet holding %s", p, en.ID)
		assert.EqualValues(t, 1, ts.srv.Broker().Sessions(), "%d runtimes, want the prompt's session", ts.srv.Broker().Sessions())
	})

	t.Run("SamePromptFromTheLogIsNotObservedTwice", func(t *testing.T) {
		var r EventsResponse
		ts.must(200, "POST", "/v1/events", []any{event("p1:1", "user/message", "p1", cwd, map[string]any{"text": "the billing migration fails with a lock timeout"})}, &r)
		assert.EqualValues(t, 1, r.Sessions["p1"], "contextVersion %d after the log brought the claimed prompt, want 1 (seen once)", r.Sessions["p1"])
		ts.must(200, "POST", "/v1/events", []any{event("p1:2", "user/message", "p1", cwd, map[string]any{"text": "Current runtime context. dshmem memory…", "injected": true})}, &r)
		assert.EqualValues(t, 1, r.Sessions["p1"], "contextVersion %d after an injected snapshot, want it unmoved (1)", r.Sessions["p1"])
		ts.must(200, "POST", "/v1/events", []any{event("p1:3", "user/message", "p1", cwd, map[string]any{"text": "something else"})}, &r)
		assert.EqualValues(t, 2, r.Sessions["p1"], "contextVersion %d after a new message, want 2", r.Sessions["p1"])
	})

	t.Run("Cooldown", func(t *testing.T) {
		code, _ := ts.call("POST", "/v1/sessions/p1/prompt", map[string]any{"text": "the billing migration fails with a lock timeout again", "cwd": cwd, "step": 2})
		assert.Equal(t, http.StatusNoContent, code, "status %d for the same memory one step later, want 204 (cooling down)", code)
	})

	t.Run("BadInput", func(t *testing.T) {
		for _, body := range []map[string]any{{"text": "x", "cwd": "relative/dir"}, {"text": "x", "origin": "robot"}, {"text": "x", "step": -1}} {
			code, b := ts.call("POST", "/v1/sessions/p2/prompt", body)
			assert.Equal(t, http.StatusBadRequest, code, "%v: status %d %s, want 400", body, code, b)
		}
		code, _ := ts.call("POST", "/v1/sessions/p2/prompt", map[string]any{"text": "  "})
		assert.Equal(t, http.StatusNoContent, code, "empty prompt: status %d, want 204", code)
	})
}

func TestSessionEndCheckpoint(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{AutoCheckpoint: time.Hour})
	const cwd = "/work/ended"
	ts.must(200, "POST", "/v1/events", []any{
		event("e:0", "session/start", "e", cwd, map[string]any{"origin": "top"}),
		event("e:1", "user/message", "e", cwd, map[string]any{"text": "remember that the staging cluster is called kestrel"}),
	}, nil)
	ts.must(200, "POST", "/v1/events", []any{event("e:2", "session/end", "e", cwd, map[string]any{})}, nil)
	// The next session's context waits for the checkpoint the end kicked;
	// the scheduled one is an hour away.
	var sc broker.SessionContext
	ts.must(200, "GET", "/v1/context?cwd="+cwd+"&session=f", nil, &sc)
	require.Contains(t, sc.Workspace, "kestrel", "the next session's context lacks what the ended one taught:\n%+v", sc)
	require.Contains(t, sc.Section, "kestrel", "the next session's context lacks what the ended one taught:\n%+v", sc)
	assert.Equal(t, broker.JoinLayers(sc.Stable, sc.Workspace), sc.Section, "section is not the stable layer and the workspace summary joined")
}

func TestIdleExit(t *testing.T) {
	now := time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)
	clock := make(chan time.Time, 1)
	clock <- now
	tick := func() time.Time { t := <-clock; clock <- t; return t }
	set := func(d time.Duration) { <-clock; clock <- now.Add(d) }
	ts := startServer(t, t.TempDir(), ServerOptions{IdleExit: 30 * time.Minute, Now: tick, idleTick: 5 * time.Millisecond})
	const cwd = "/work/idle"
	ts.must(200, "POST", "/v1/events", []any{
		event("i:0", "session/start", "i", cwd, map[string]any{"origin": "top"}),
		event("i:1", "user/message", "i", cwd, map[string]any{"text": "remember that invoices are rendered with wkhtmltopdf"}),
	}, nil)

	idle := func(d time.Duration) bool {
		select {
		case <-ts.srv.Idle():
			return true
		case <-time.After(d):
			return false
		}
	}
	set(31 * time.Minute) // no request for 31 minutes, but the session is live
	require.False(t, idle(300*time.Millisecond), "the server went idle while a session runtime was live")
	ts.srv.Broker().Sweep() // the session's runtime idles out (30 minutes)
	// A host's heartbeat for an open session is use; a bare health check
	// is not.
	ts.must(200, "GET", "/v1/healthz?session=i", nil, nil)
	set(60 * time.Minute)
	require.False(t, idle(300*time.Millisecond), "the server went idle 29 minutes after a session's heartbeat")
	set(62 * time.Minute)
	ts.must(200, "GET", "/v1/healthz", nil, nil)
	require.True(t, idle(5*time.Second), "the server did not go idle after 31 minutes with no request and no live session")
	// The pending work was committed before the exit.
	entries, err := ts.eng.Entries(t.Context(), observer.EntryFilter{Scopes: []string{observer.StreamForCwd(cwd)}})
	require.NoError(t, err)
	assert.False(t, len(entries) != 1 || !strings.Contains(entries[0].Content, "wkhtmltopdf"), "entries after the idle exit: %+v; want the pending session distilled", entries)
}

func TestPromptObservedOnce(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	const cwd = "/work/once"
	ts.must(200, "POST", "/v1/remember", map[string]any{"content": "Use PostgreSQL 16 for the billing service", "cwd": cwd}, nil)
	version := func(sid string) uint64 {
		var r EventsResponse
		ts.must(200, "POST", "/v1/events", []any{event(fmt.Sprintf("%s:probe:%d", sid, time.Now().UnixNano()), "tool/call", sid, cwd, map[string]any{"name": "probe"})}, &r)
		return r.Sessions[sid] - 1 // the probe's own event
	}

	t.Run("LogFirst", func(t *testing.T) {
		ts.must(200, "POST", "/v1/events", []any{event("lf:1", "user/message", "lf", cwd, map[string]any{"text": "actually, use PostgreSQL", "messageId": "msg-1"})}, nil)
		ts.call("POST", "/v1/sessions/lf/prompt", map[string]any{"text": "actually, use PostgreSQL", "messageId": "msg-1", "cwd": cwd, "step": 1})
		v := version("lf")
		assert.EqualValues(t, 1, v, "contextVersion %d, want 1: the prompt the log brought first was observed again", v)
	})

	t.Run("ClaimFirstByID", func(t *testing.T) {
		ts.call("POST", "/v1/sessions/cf/prompt", map[string]any{"text": "actually, use PostgreSQL", "messageId": "msg-2", "cwd": cwd, "step": 1})
		ts.must(200, "POST", "/v1/events", []any{event("cf:1", "user/message", "cf", cwd, map[string]any{"text": "actually, use PostgreSQL", "messageId": "msg-2"})}, nil)
		v := version("cf")
		assert.EqualValues(t, 1, v, "contextVersion %d, want 1", v)
	})

	t.Run("LongPrompt", func(t *testing.T) {
		long := strings.Repeat("the billing migration fails again ", 300) // over 4000 characters
		ts.call("POST", "/v1/sessions/lp/prompt", map[string]any{"text": long, "cwd": cwd, "step": 1})
		ts.must(200, "POST", "/v1/events", []any{event("lp:1", "user/message", "lp", cwd, map[string]any{"text": long})}, nil)
		v := version("lp")
		assert.EqualValues(t, 1, v, "contextVersion %d, want 1: a long claimed prompt was observed twice", v)
	})
}

func TestEndedSessionStaysEnded(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	const cwd = "/work/ended2"
	at := func(sec int) string { return time.Date(2026, 8, 18, 10, 0, sec, 0, time.UTC).Format(time.RFC3339Nano) }
	ev := func(id, typ string, sec int, data map[string]any) map[string]any {
		e := event(id, typ, "z", cwd, data)
		e["time"] = at(sec)
		return e
	}
	ts.must(200, "POST", "/v1/events", []any{ev("z:1", "user/message", 1, map[string]any{"text": "hello"})}, nil)
	ts.must(200, "POST", "/v1/events", []any{ev("z:end", "session/end", 5, map[string]any{})}, nil)
	// The watcher reads the host's last rows after the plugin's end.
	ts.must(200, "POST", "/v1/events", []any{ev("z:2", "assistant/message", 4, map[string]any{"text": "late row"})}, nil)
	n := ts.srv.Broker().Sessions()
	require.EqualValues(t, 0, n, "%d runtimes after a row from before the end, want 0", n)
	// A resumed session's new events bring it back.
	ts.must(200, "POST", "/v1/events", []any{ev("z:3", "user/message", 9, map[string]any{"text": "resumed"})}, nil)
	if n := ts.srv.Broker().Sessions(); n != 1 {
		t.Fatalf("%d runtimes after a resumed session's event, want 1", n)
	}
}

func TestPacketLongPoll(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	const cwd = "/work/poll"
	ts.must(200, "POST", "/v1/remember", map[string]any{"content": "When the billing migration fails with a lock timeout, rerun it with --lock-wait 60",
		"cwd": cwd, "type": "fix", "importance": 3}, nil)
	ts.must(200, "POST", "/v1/events", []any{event("lp:0", "session/start", "lp", cwd, map[string]any{"origin": "top"})}, nil)
	ts.srv.Broker().Settle()

	t.Run("AnsweredWhenAPacketIsComputed", func(t *testing.T) {
		got := make(chan int, 1)
		go func() {
			code, _ := ts.call("GET", "/v1/sessions/lp/packet?wait=10000", nil)
			got <- code
		}()
		select {
		case code := <-got:
			t.Fatalf("the poll answered %d before anything happened", code)
		case <-time.After(200 * time.Millisecond):
		}
		ts.must(200, "POST", "/v1/events", []any{event("lp:1", "user/message", "lp", cwd, map[string]any{"text": "the billing migration fails with a lock timeout"})}, nil)
		select {
		case code := <-got:
			require.EqualValues(t, 200, code, "status %d, want 200 with the packet", code)
		case <-time.After(10 * time.Second):
			t.Fatal("the poll was not answered when the packet was computed")
		}
	})

	t.Run("TimesOut", func(t *testing.T) {
		code, _ := ts.call("GET", "/v1/sessions/lp/packet?wait=100", nil)
		require.Equal(t, http.StatusNoContent, code, "status %d, want 204 once wait is over", code)
	})

	t.Run("BadWait", func(t *testing.T) {
		for _, w := range []string{"-1", "abc", "30001"} {
			code, _ := ts.call("GET", "/v1/sessions/lp/packet?wait="+w, nil)
			assert.Equal(t, http.StatusBadRequest, code, "wait=%s: status %d, want 400", w, code)
		}
	})

	t.Run("SessionEndAnswers", func(t *testing.T) {
		got := make(chan int, 1)
		go func() {
			code, _ := ts.call("GET", "/v1/sessions/lp/packet?wait=20000", nil)
			got <- code
		}()
		time.Sleep(100 * time.Millisecond)
		ts.must(200, "POST", "/v1/events", []any{event("lp:end", "session/end", "lp", cwd, map[string]any{})}, nil)
		select {
		case code := <-got:
			require.Equal(t, http.StatusNoContent, code, "status %d, want 204", code)
		case <-time.After(10 * time.Second):
			t.Fatal("the poll outlived its session")
		}
	})

	t.Run("ShutdownAnswers", func(t *testing.T) {
		ts.must(200, "POST", "/v1/events", []any{event("lq:0", "session/start", "lq", cwd, map[string]any{"origin": "top"})}, nil)
		req, _ := http.NewRequest("GET", ts.url+"/v1/sessions/lq/packet?wait=30000", nil)
		req.Header.Set("Authorization", "Bearer "+ts.token)
		go func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		time.Sleep(100 * time.Millisecond)
		done := make(chan struct{})
		go func() { ts.stop(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("shutdown waited for a long poll")
		}
	})
}
