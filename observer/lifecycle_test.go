package observer

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestPromptPacket(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	const cwd = "/work/prompt"
	var en Entry
	ts.must(200, "POST", "/v1/remember", map[string]any{"content": "When the billing migration fails with a lock timeout, rerun it with --lock-wait 60",
		"cwd": cwd, "type": "fix", "importance": 3}, &en)

	t.Run("ServedForANewSession", func(t *testing.T) {
		var p Packet
		ts.must(200, "POST", "/v1/sessions/p1/prompt", map[string]any{"text": "the billing migration fails with a lock timeout", "cwd": cwd, "step": 1}, &p)
		if len(p.Entries) == 0 || p.Entries[0].ID != en.ID || !strings.Contains(p.Text, "--lock-wait 60") {
			t.Fatalf("got %+v, want a packet holding %s", p, en.ID)
		}
		if ts.srv.Broker().Sessions() != 1 {
			t.Errorf("%d runtimes, want the prompt's session", ts.srv.Broker().Sessions())
		}
	})

	t.Run("SamePromptFromTheLogIsNotObservedTwice", func(t *testing.T) {
		var r EventsResponse
		ts.must(200, "POST", "/v1/events", []any{event("p1:1", "user/message", "p1", cwd, map[string]any{"text": "the billing migration fails with a lock timeout"})}, &r)
		if r.Sessions["p1"] != 1 {
			t.Errorf("contextVersion %d after the log brought the claimed prompt, want 1 (seen once)", r.Sessions["p1"])
		}
		ts.must(200, "POST", "/v1/events", []any{event("p1:2", "user/message", "p1", cwd, map[string]any{"text": "Current runtime context. dshmem memory…", "injected": true})}, &r)
		if r.Sessions["p1"] != 1 {
			t.Errorf("contextVersion %d after an injected snapshot, want it unmoved (1)", r.Sessions["p1"])
		}
		ts.must(200, "POST", "/v1/events", []any{event("p1:3", "user/message", "p1", cwd, map[string]any{"text": "something else"})}, &r)
		if r.Sessions["p1"] != 2 {
			t.Errorf("contextVersion %d after a new message, want 2", r.Sessions["p1"])
		}
	})

	t.Run("Cooldown", func(t *testing.T) {
		code, _ := ts.call("POST", "/v1/sessions/p1/prompt", map[string]any{"text": "the billing migration fails with a lock timeout again", "cwd": cwd, "step": 2})
		if code != http.StatusNoContent {
			t.Errorf("status %d for the same memory one step later, want 204 (cooling down)", code)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		for _, body := range []map[string]any{{"text": "x", "cwd": "relative/dir"}, {"text": "x", "origin": "robot"}, {"text": "x", "step": -1}} {
			if code, b := ts.call("POST", "/v1/sessions/p2/prompt", body); code != http.StatusBadRequest {
				t.Errorf("%v: status %d %s, want 400", body, code, b)
			}
		}
		if code, _ := ts.call("POST", "/v1/sessions/p2/prompt", map[string]any{"text": "  "}); code != http.StatusNoContent {
			t.Errorf("empty prompt: status %d, want 204", code)
		}
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
	var sc SessionContext
	ts.must(200, "GET", "/v1/context?cwd="+cwd+"&session=f", nil, &sc)
	if !strings.Contains(sc.Workspace, "kestrel") || !strings.Contains(sc.Section, "kestrel") {
		t.Fatalf("the next session's context lacks what the ended one taught:\n%+v", sc)
	}
	if sc.Section != joinLayers(sc.Stable, sc.Workspace) {
		t.Errorf("section is not the stable layer and the workspace summary joined")
	}
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
	if idle(300 * time.Millisecond) {
		t.Fatal("the server went idle while a session runtime was live")
	}
	ts.srv.Broker().Sweep()                      // the session's runtime idles out (30 minutes)
	ts.must(200, "GET", "/v1/healthz", nil, nil) // health checks do not count as use
	if !idle(5 * time.Second) {
		t.Fatal("the server did not go idle after 31 minutes with no request and no live session")
	}
	// The pending work was committed before the exit.
	entries, err := ts.eng.Entries(t.Context(), EntryFilter{Scopes: []string{StreamForCwd(cwd)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !strings.Contains(entries[0].Content, "wkhtmltopdf") {
		t.Errorf("entries after the idle exit: %+v; want the pending session distilled", entries)
	}
}
