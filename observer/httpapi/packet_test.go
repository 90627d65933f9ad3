package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/broker"
	"dshmem/sqlstore"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fetch returns the packet of sid, or nil for 204 (with the reason).
func (ts *testServer) fetch(sid, query string) (*broker.Packet, string) {
	ts.t.Helper()
	ts.srv.Broker().Settle()
	req, _ := http.NewRequest("GET", ts.url+"/v1/sessions/"+sid+"/packet"+query, nil)
	req.Header.Set("Authorization", "Bearer "+ts.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(ts.t, err)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil, resp.Header.Get("X-Dshmem-Reason")
	}
	var p broker.Packet
	require.EqualValues(ts.t, 200, resp.StatusCode, "packet %s: status %d", sid, resp.StatusCode)
	require.Nil(ts.t, json.NewDecoder(resp.Body).Decode(&p), "packet %s: status %d", sid, resp.StatusCode)
	return &p, ""
}

func TestPackets(t *testing.T) {
	now := time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)
	clock := &now
	ts := startServer(t, t.TempDir(), ServerOptions{Now: func() time.Time { return *clock }})
	const cwd = "/work/pk"
	var en observer.Entry
	ts.must(200, "POST", "/v1/remember", map[string]any{"content": "Run the migrations with make migrate-up before starting the api server",
		"title": "migrations before api server", "cwd": cwd, "type": "procedure", "importance": 3}, &en)
	n := 0
	push := func(sid, typ string, data map[string]any) uint64 {
		t.Helper()
		n++
		var r EventsResponse
		ts.must(200, "POST", "/v1/events", []any{event(fmt.Sprintf("%s:%d", sid, n), typ, sid, cwd, data)}, &r)
		return r.Sessions[sid]
	}
	push("a", "session/start", map[string]any{"origin": "top"})
	v := push("a", "user/message", map[string]any{"text": "the api server fails to start, migrations missing?"})

	t.Run("Served", func(t *testing.T) {
		p, why := ts.fetch("a", fmt.Sprintf("?contextVersion=%d&step=0", v))
		require.NotNil(t, p, "got nothing (%s), want a packet", why)
		require.EqualValues(t, "a", p.Session, "got %+v", p)
		require.Equal(t, v, p.ContextVersion, "got %+v", p)
		require.NotEqualValues(t, 0, len(p.Entries), "got %+v", p)
		require.Equal(t, en.ID, p.Entries[0].ID, "got %+v", p)
		require.False(t, p.Mode == broker.ModeHint && (!strings.HasPrefix(p.Text, broker.PacketFrame) || len(p.Text) > 600), "hint text %q: want framed, at most 600 bytes", p.Text)
	})
	t.Run("ServedOnce", func(t *testing.T) {
		p, why := ts.fetch("a", "")
		require.Nil(t, p, "got %+v (%s), want nothing: served", p, why)
		require.EqualValues(t, "served", why, "got %+v (%s), want nothing: served", p, why)
	})
	t.Run("Cooldown", func(t *testing.T) {
		// The session's step moves to 3 first, so the packet of the next
		// turn is computed at step 3 and fresh when fetched there (TTL 2):
		// what keeps the entry out is its cooldown (served at 0, 3 < 0+8),
		// not expiry.
		ts.fetch("a", "?step=3")
		v := push("a", "user/message", map[string]any{"text": "api server still fails, migrations?"})
		p, why := ts.fetch("a", fmt.Sprintf("?contextVersion=%d&step=3", v))
		require.NotEqual(t, "expired", why, "the packet expired: the cooldown was not what was tested")
		if p != nil {
			for _, e := range p.Entries {
				require.NotEqual(t, en.ID, e.ID, "got %+v (%s), want the entry in its cooldown", p, why)
			}
		}
	})
	t.Run("AfterCooldown", func(t *testing.T) {
		// step 9 ≥ 0 + 8: the entry may come back.
		ts.fetch("a", "?step=9") // moves the session's step
		v := push("a", "user/message", map[string]any{"text": "api server and the migrations, once more"})
		p, why := ts.fetch("a", fmt.Sprintf("?contextVersion=%d&step=9", v))
		require.NotNil(t, p, "got %+v (%s), want the entry back after its cooldown", p, why)
		require.Equal(t, en.ID, p.Entries[0].ID, "got %+v (%s), want the entry back after its cooldown", p, why)
	})
	t.Run("Stale", func(t *testing.T) {
		push("b", "session/start", map[string]any{"origin": "top"})
		v := push("b", "user/message", map[string]any{"text": "how do I run the migrations for the api server"})
		ts.srv.Broker().Settle()
		push("b", "assistant/message", map[string]any{"text": "looking", "step": 1})
		p, why := ts.fetch("b", fmt.Sprintf("?contextVersion=%d", v))
		require.Nil(t, p, "got %+v (%s), want nothing: stale", p, why)
		require.EqualValues(t, "stale", why, "got %+v (%s), want nothing: stale", p, why)
	})
	t.Run("Expired", func(t *testing.T) {
		push("c", "session/start", map[string]any{"origin": "top"})
		v := push("c", "user/message", map[string]any{"text": "api server migrations again"})
		p, why := ts.fetch("c", fmt.Sprintf("?contextVersion=%d&step=2", v))
		require.Nil(t, p, "got %+v (%s), want nothing: expired (TTL 2 steps)", p, why)
		require.EqualValues(t, "expired", why, "got %+v (%s), want nothing: expired (TTL 2 steps)", p, why)
	})
	t.Run("Checklist", func(t *testing.T) {
		push("d", "session/start", map[string]any{"origin": "top"})
		push("d", "user/message", map[string]any{"text": "start the api server"})
		push("d", "tool/call", map[string]any{"name": "bash", "args": map[string]any{"cmd": "make run"}})
		push("d", "tool/result", map[string]any{"name": "bash", "ok": false, "text": "relation users does not exist"})
		push("d", "tool/call", map[string]any{"name": "bash", "args": map[string]any{"cmd": "make run"}})
		v := push("d", "user/message", map[string]any{"text": "no, that's wrong, the api server needs the migrations"})
		p, why := ts.fetch("d", fmt.Sprintf("?contextVersion=%d", v))
		require.NotNil(t, p, "got %+v (%s), want a checklist with signals", p, why)
		require.Equal(t, broker.ModeChecklist, p.Mode, "got %+v (%s), want a checklist with signals", p, why)
		require.False(t, len(p.Signals) < 2, "got %+v (%s), want a checklist with signals", p, why)
	})
	t.Run("SessionEndFrees", func(t *testing.T) {
		before := ts.srv.Broker().Sessions()
		push("d", "session/end", map[string]any{})
		got := ts.srv.Broker().Sessions()
		require.Equal(t, before-1, got, "got %d runtimes, want %d", got, before-1)
		p, why := ts.fetch("d", "")
		require.Nil(t, p, "got %+v (%s), want nothing for an ended session", p, why)
		require.EqualValues(t, "unknown-session", why, "got %+v (%s), want nothing for an ended session", p, why)
	})
	t.Run("IdleFrees", func(t *testing.T) {
		later := now.Add(31 * time.Minute)
		clock = &later
		n := ts.srv.Broker().Sweep()
		require.NotEqualValues(t, 0, n, "swept %d, %d left; want every idle runtime freed", n, ts.srv.Broker().Sessions())
		require.EqualValues(t, 0, ts.srv.Broker().Sessions(), "swept %d, %d left; want every idle runtime freed", n, ts.srv.Broker().Sessions())
	})
	t.Run("ShownLogged", func(t *testing.T) {
		ts.srv.intakeWG.Wait()
		evs, err := ts.eng.Store().Events(t.Context(), sqlstore.EventFilter{Type: events.TypeMemoryShown, Session: "a"})
		require.NoError(t, err)
		count := 0
		for _, ev := range evs {
			var shown payload.Shown
			require.NoError(t, payload.Unmarshal(ev.Data, &shown), "memory/shown %s", ev.ID)
			if slices.Contains([]string{"hint", "checklist", "prefetch"}, shown.Mode) && shown.Session == "a" && len(shown.Entries) > 0 {
				count++
			}
		}
		require.NotEqualValues(t, 0, count, "no memory/shown event for the served packet")
	})
}

func TestContextMaintenanceAndRefresh(t *testing.T) {
	now := time.Date(2026, 9, 30, 10, 0, 0, 0, time.UTC) // the events are of 2026-08-18: backup due
	ts := startServer(t, t.TempDir(), ServerOptions{Now: func() time.Time { return now }})
	ts.must(200, "POST", "/v1/events", []any{
		event("m:0", "session/start", "sub", "/w/m", map[string]any{"origin": "subagent"}),
		event("m:1", "session/start", "top1", "/w/m", map[string]any{"origin": "top"}),
		event("m:2", "session/start", "top2", "/w/m", map[string]any{"origin": "top"}),
	}, nil)
	get := func(q string) broker.SessionContext {
		var sc broker.SessionContext
		ts.must(200, "GET", "/v1/context?"+q, nil, &sc)
		return sc
	}
	if sc := get("session=sub&cwd=/w/m"); len(sc.Maintenance) != 0 {
		t.Fatalf("sub-agent got maintenance %v", sc.Maintenance)
	}
	if sc := get("session=x&cwd=/w/m&delegationDepth=1"); len(sc.Maintenance) != 0 {
		t.Fatalf("delegated session got maintenance %v", sc.Maintenance)
	}
	sc := get("session=top1&cwd=/w/m&origin=top")
	require.NotEqualValues(t, 0, len(sc.Maintenance), "first top-level session: got %v, want a backup reminder", sc.Maintenance)
	require.Contains(t, sc.Maintenance[0], "backup due", "first top-level session: got %v, want a backup reminder", sc.Maintenance)
	if sc := get("session=top2&cwd=/w/m&origin=top"); len(sc.Maintenance) != 0 {
		t.Fatalf("second top-level session got maintenance %v", sc.Maintenance)
	}
	ts.must(200, "POST", "/v1/events", []any{event("m:3", "compaction/summary", "top2", "", map[string]any{"compactionId": "c1", "text": "we did things"})}, nil)
	sc = get("session=top2")
	require.True(t, sc.Refresh, "after compaction: got %+v, want a one-line refresh hint", sc)
	require.EqualValues(t, "", sc.Stable, "after compaction: got %+v, want a one-line refresh hint", sc)
	require.EqualValues(t, "", sc.Workspace, "after compaction: got %+v, want a one-line refresh hint", sc)
	require.EqualValues(t, 0, strings.Count(sc.Dynamic, "\n"), "after compaction: got %+v, want a one-line refresh hint", sc)
	require.NotEqualValues(t, "", sc.Dynamic, "after compaction: got %+v, want a one-line refresh hint", sc)
	if sc := get("session=top2"); sc.Refresh {
		t.Fatal("the refresh hint came twice")
	}
}

// TestPacketBudgetOption: the server's packets keep to the configured
// byte budget (here 250, under the 600 default), so the option is what
// bounds them.
func TestPacketBudgetOption(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{Packets: broker.PacketOptions{Budget: 250}})
	const cwd = "/work/budget"
	for i := range 6 {
		ts.must(200, "POST", "/v1/remember", map[string]any{"cwd": cwd, "type": "procedure", "importance": 3,
			"title":   fmt.Sprintf("api server start %d", i),
			"content": "Run the migrations with make migrate-up before starting the api server; " + strings.Repeat("then check the health endpoint and the logs. ", 6)}, nil)
	}
	ts.must(200, "POST", "/v1/events", []any{event("bud:0", "session/start", "bud", cwd, map[string]any{"origin": "top"})}, nil)
	var r EventsResponse
	ts.must(200, "POST", "/v1/events", []any{event("bud:1", "user/message", "bud", cwd, map[string]any{"text": "the api server fails to start, migrations missing?"})}, &r)
	p, why := ts.fetch("bud", fmt.Sprintf("?contextVersion=%d&step=0", r.Sessions["bud"]))
	require.NotNil(t, p, "no packet (%s)", why)
	require.NotEmpty(t, p.Text, "a %s packet has no text", p.Mode)
	require.LessOrEqual(t, len(p.Text), 250, "packet text %d bytes over the 250-byte budget: %q", len(p.Text), p.Text)
}

// TestRecallShownOnlyWhatWasGiven: a recall for a session records the
// entries it gave as shown, but not one a tiny byte budget cut down to
// a part of its title.
func TestRecallShownOnlyWhatWasGiven(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	var en observer.Entry
	ts.must(200, "POST", "/v1/remember", map[string]any{"content": "The staging cache is redis 7 on port 6380", "cwd": "/w/r"}, &en)
	shown := func(session string) []string {
		ts.srv.intakeWG.Wait()
		evs, err := ts.eng.Store().Events(t.Context(), sqlstore.EventFilter{Type: events.TypeMemoryShown, Session: session})
		require.NoError(t, err)
		var ids []string
		for _, ev := range evs {
			var sh payload.Shown
			require.NoError(t, payload.Unmarshal(ev.Data, &sh))
			ids = append(ids, sh.Entries...)
		}
		return ids
	}
	var res recall.Result
	ts.must(200, "POST", "/v1/recall", map[string]any{"query": "redis", "cwd": "/w/r", "session": "tiny", "bytes": 5}, &res)
	require.Len(t, res.Items, 1, "the match, its title cut")
	assert.Empty(t, shown("tiny"), "a sliver of a title recorded as shown")
	ts.must(200, "POST", "/v1/recall", map[string]any{"query": "redis", "cwd": "/w/r", "session": "full"}, &res)
	require.Len(t, res.Items, 1)
	assert.Equal(t, []string{en.ID}, shown("full"))
}
