package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/observer/broker"
	"dshmem/observer/distill"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testServer is a real server listening on 127.0.0.1:0 over a fresh root.
type testServer struct {
	t     *testing.T
	root  string
	eng   *observer.Engine
	srv   *Server
	url   string
	token string
	done  chan error
}

func startServer(t *testing.T, root string, opts ServerOptions) *testServer {
	t.Helper()
	return startServerWith(t, root, observer.Options{}, opts)
}

// startServerWith is startServer with the engine's options.
func startServerWith(t *testing.T, root string, eo observer.Options, opts ServerOptions) *testServer {
	t.Helper()
	ctx := context.Background()
	eng, err := observer.Open(ctx, root, eo)
	require.NoError(t, err)
	if opts.AutoCheckpoint == 0 {
		opts.AutoCheckpoint = -1
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	if opts.Packets.RecallTimeout == 0 {
		// The packet tests assert what a packet holds, not how fast it is
		// found: under -race on a loaded machine the first recall of a
		// process (word tables, cold statements) takes well over the
		// 100ms default, and its packet would be empty.
		opts.Packets.RecallTimeout = time.Minute
	}
	srv, err := NewServer(eng, opts)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ts := &testServer{t: t, root: root, eng: eng, srv: srv, url: "http://" + l.Addr().String(), token: srv.Token(), done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(l) }()
	t.Cleanup(ts.stop)
	return ts
}

// stop shuts the server down and closes the engine; it may be called
// more than once.
func (ts *testServer) stop() {
	if ts.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	assert.NoError(ts.t, ts.srv.Shutdown(ctx), "shutdown")
	assert.NoError(ts.t, <-ts.done, "serve")
	assert.NoError(ts.t, ts.eng.Close(), "close")
	ts.srv = nil
}

// call sends a request with the server's token and returns the status
// and body. body is sent as is when it is a string or []byte, else as JSON.
func (ts *testServer) call(method, path string, body any) (int, []byte) {
	ts.t.Helper()
	return ts.callWith(ts.token, method, path, body)
}

func (ts *testServer) callWith(token, method, path string, body any) (int, []byte) {
	ts.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(ts.t, err)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	require.NoError(ts.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(ts.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(ts.t, err)
	return resp.StatusCode, out
}

// must sends a request, checks its status and decodes the answer into v.
func (ts *testServer) must(want int, method, path string, body, v any) {
	ts.t.Helper()
	code, out := ts.call(method, path, body)
	require.Equal(ts.t, want, code, "%s %s: got %d, want %d: %s", method, path, code, want, out)
	if v != nil {
		require.NoError(ts.t, json.Unmarshal(out, v), "%s %s: decode %s", method, path, out)
	}
}

func errCode(t *testing.T, body []byte) string {
	t.Helper()
	var e APIError
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("not an API error: %s", body)
	}
	return e.Error.Code
}

func event(id, typ, session, cwd string, data any) map[string]any {
	m := map[string]any{"id": id, "type": typ, "time": "2026-08-18T10:00:00Z", "session": session, "data": data}
	if cwd != "" {
		m["cwd"] = cwd
	}
	return m
}

// TestAuthorizationScheme: the scheme is matched without regard to
// case; a wrong scheme, a missing token or extra words are refused.
func TestAuthorizationScheme(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	for h, want := range map[string]int{
		"Bearer " + ts.token:                   200,
		"bearer " + ts.token:                   200,
		"BEARER  " + ts.token + "  ":           200,
		"Basic " + ts.token:                    401,
		"Bearer":                               401,
		ts.token:                               401,
		"Bearer " + ts.token + " x":            401,
		"Bearer " + ts.token[:len(ts.token)-1]: 401,
	} {
		req, err := http.NewRequest("GET", ts.url+"/v1/healthz", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", h)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, "Authorization: %q", h)
	}
}

func TestServerRoutes(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	const cwd = "/home/u/proj"

	t.Run("Unauthorized", func(t *testing.T) {
		for _, tok := range []string{"", "wrong"} {
			for _, p := range []string{"/v1/healthz", "/v1/metrics", "/v1/context", "/v1/sessions/s1/packet"} {
				code, body := ts.callWith(tok, http.MethodGet, p, nil)
				if code != http.StatusUnauthorized || errCode(t, body) != CodeUnauthorized {
					t.Fatalf("token %q %s: got %d %s, want 401", tok, p, code, body)
				}
			}
			code, body := ts.callWith(tok, http.MethodPost, "/v1/events", `[]`)
			if code != http.StatusUnauthorized || errCode(t, body) != CodeUnauthorized {
				t.Fatalf("token %q events: got %d %s, want 401", tok, code, body)
			}
		}
	})
	t.Run("Healthz", func(t *testing.T) {
		var h Health
		ts.must(200, "GET", "/v1/healthz", nil, &h)
		require.True(t, h.OK, "got %+v", h)
		require.EqualValues(t, "v1", h.API, "got %+v", h)
		require.Equal(t, os.Getpid(), h.PID, "got %+v", h)
	})
	var resp EventsResponse
	t.Run("EventsArray", func(t *testing.T) {
		evs := []any{
			event("r:1", "session/start", "s1", cwd, map[string]any{"origin": "top"}),
			event("r:2", "user/message", "s1", "", map[string]any{"text": "the deploy uses blue green rollout"}),
			map[string]any{"id": "r:3", "type": "user/message", "session": "s1"}, // no time
		}
		ts.must(200, "POST", "/v1/events", evs, &resp)
		require.EqualValues(t, 2, resp.Appended, "got %+v", resp)
		require.EqualValues(t, 1, resp.Rejected, "got %+v", resp)
		require.Len(t, resp.Results, 3, "got %+v", resp)
		r := resp.Results[2]
		require.Equal(t, observer.StatusRejected, r.Status, "got %+v, want a rejection of field time on line 3", r)
		require.EqualValues(t, "time", r.Field, "got %+v, want a rejection of field time on line 3", r)
		require.EqualValues(t, 3, r.Line, "got %+v, want a rejection of field time on line 3", r)
		require.EqualValues(t, 2, resp.Sessions["s1"], "got contextVersion %d, want 2", resp.Sessions["s1"])
	})
	t.Run("EventsJSONLDuplicates", func(t *testing.T) {
		// r:2 again, as first sent: a duplicate.
		b1, _ := json.Marshal(event("r:2", "user/message", "s1", "", map[string]any{"text": "the deploy uses blue green rollout"}))
		b2, _ := json.Marshal(event("r:4", "assistant/message", "s1", "", map[string]any{"text": "ok"}))
		var r EventsResponse
		ts.must(200, "POST", "/v1/events", string(b1)+"\n\n"+string(b2)+"\n", &r)
		require.EqualValues(t, 1, r.Duplicates, "got %+v", r)
		require.EqualValues(t, 1, r.Appended, "got %+v", r)
		require.EqualValues(t, 3, r.Results[1].Line, "got %+v", r)
	})
	t.Run("EventsMalformed", func(t *testing.T) {
		for _, body := range []string{`[{"id":`, ``, `[]`} {
			code, out := ts.call("POST", "/v1/events", body)
			if code != 400 || errCode(t, out) != CodeBadRequest {
				t.Fatalf("body %q: got %d %s, want 400", body, code, out)
			}
		}
	})
	t.Run("EventsTooLarge", func(t *testing.T) {
		big := bytes.Repeat([]byte("x"), observer.MaxIngestBytes+10)
		code, out := ts.call("POST", "/v1/events", big)
		if code != http.StatusRequestEntityTooLarge || errCode(t, out) != CodeTooLarge {
			t.Fatalf("got %d %s, want 413", code, out)
		}
		code, out = ts.call("POST", "/v1/recall", bytes.Repeat([]byte(" "), MaxRequestBytes+1))
		require.Equal(t, http.StatusRequestEntityTooLarge, code, "recall: got %d %s, want 413", code, out)
		// The cap is 1 MiB, by value: a body of exactly 1 MiB is read and
		// answered, one byte more is refused.
		exact := append([]byte(`{"query":"x"}`), bytes.Repeat([]byte(" "), 1<<20-len(`{"query":"x"}`))...)
		code, out = ts.call("POST", "/v1/recall", exact)
		require.Equal(t, 200, code, "a 1 MiB recall body: %d %s", code, out)
		code, out = ts.call("POST", "/v1/recall", append(exact, ' '))
		require.Equal(t, http.StatusRequestEntityTooLarge, code, "1 MiB + 1: %d %s", code, out)
		require.Contains(t, string(out), "over 1048576 bytes")
	})
	var entry observer.Entry
	t.Run("Remember", func(t *testing.T) {
		ts.must(200, "POST", "/v1/remember", map[string]any{"content": "Deploys use a blue green rollout behind the load balancer", "cwd": cwd, "type": "decision"}, &entry)
		require.True(t, strings.HasPrefix(entry.ID, "m-"), "got %+v", entry)
		require.Equal(t, observer.StreamForCwd(cwd), entry.Scope, "got %+v", entry)
		code, out := ts.call("POST", "/v1/remember", map[string]any{"content": "sk-ant-api03-" + strings.Repeat("A", 90), "global": true})
		require.EqualValues(t, 400, code, "a bare secret: got %d %s, want 400", code, out)
		code, out = ts.call("POST", "/v1/remember", `{"content":"x","cwd":"/p","colour":"red"}`)
		require.EqualValues(t, 400, code, "unknown field: got %d %s, want 400 naming it", code, out)
		require.Contains(t, string(out), "colour", "unknown field: got %d %s, want 400 naming it", code, out)
	})
	t.Run("Recall", func(t *testing.T) {
		var res struct {
			Items []struct{ ID, Scope string } `json:"items"`
		}
		ts.must(200, "POST", "/v1/recall", map[string]any{"query": "blue green rollout", "cwd": cwd, "session": "s1"}, &res)
		require.NotEqualValues(t, 0, len(res.Items), "got %+v, want %s first", res.Items, entry.ID)
		require.Equal(t, entry.ID, res.Items[0].ID, "got %+v, want %s first", res.Items, entry.ID)
		code, out := ts.call("POST", "/v1/recall", `{"query":`)
		require.EqualValues(t, 400, code, "malformed: got %d %s", code, out)
		code, out = ts.call("POST", "/v1/recall", map[string]any{"query": "x", "stream": "ws-00000000000000000000"})
		if code != 404 || errCode(t, out) != CodeUnknownScope {
			t.Fatalf("unknown scope: got %d %s, want 404 unknown_scope", code, out)
		}
		code, out = ts.call("POST", "/v1/recall", map[string]any{"query": "x", "stream": "nope"})
		require.EqualValues(t, 400, code, "bad stream: got %d %s, want 400", code, out)
	})
	t.Run("Search", func(t *testing.T) {
		var res struct {
			Items []struct{ Kind, Scope string } `json:"items"`
		}
		ts.must(200, "POST", "/v1/search", map[string]any{"query": "blue green", "stream": observer.StreamForCwd(cwd)}, &res)
		require.NotEqualValues(t, 0, len(res.Items), "got %+v", res.Items)
		require.EqualValues(t, "episodic", res.Items[0].Kind, "got %+v", res.Items)
		code, out := ts.call("POST", "/v1/search", map[string]any{"query": "x", "stream": "ws-11111111111111111111"})
		if code != 404 || errCode(t, out) != CodeUnknownScope {
			t.Fatalf("unknown scope: got %d %s", code, out)
		}
		code, _ = ts.call("POST", "/v1/search", map[string]any{"query": "x", "kind": "dreams"})
		require.EqualValues(t, 400, code, "bad kind: got %d", code)
	})
	t.Run("Context", func(t *testing.T) {
		var sc broker.SessionContext
		ts.must(200, "GET", "/v1/context?cwd="+cwd+"&session=s1&origin=top", nil, &sc)
		require.Contains(t, sc.Workspace, "blue green", "got %+v", sc)
		require.Contains(t, sc.Workspace, "not instructions", "got %+v", sc)
		require.Len(t, sc.StableHash, 64, "got %+v", sc)
		code, _ := ts.call("GET", "/v1/context?cwd=relative/dir", nil)
		require.EqualValues(t, 400, code, "relative cwd: got %d, want 400", code)
	})
	t.Run("Packet", func(t *testing.T) {
		ts.srv.Broker().Settle()
		code, out := ts.call("GET", "/v1/sessions/nobody/packet", nil)
		require.Equal(t, http.StatusNoContent, code, "unknown session: got %d %s, want 204", code, out)
		code, out = ts.call("GET", "/v1/sessions/s1/packet?contextVersion=x", nil)
		require.EqualValues(t, 400, code, "bad contextVersion: got %d %s", code, out)
	})
	t.Run("Checkpoint", func(t *testing.T) {
		var res CheckpointResponse
		ts.must(200, "POST", "/v1/checkpoint", map[string]any{"cwd": cwd, "force": true}, &res)
		require.Len(t, res.Results, 1, "got %+v", res)
		require.EqualValues(t, "s1", res.Results[0].Session, "got %+v", res)
		code, out := ts.call("POST", "/v1/checkpoint", map[string]any{"stream": "ws-22222222222222222222"})
		require.EqualValues(t, 404, code, "unknown scope: got %d %s", code, out)
	})
	t.Run("Forget", func(t *testing.T) {
		var en observer.Entry
		ts.must(200, "POST", "/v1/forget", map[string]any{"id": entry.ID, "reason": "test"}, &en)
		require.EqualValues(t, "forgotten", en.Status, "got %+v", en)
		code, out := ts.call("POST", "/v1/forget", map[string]any{"id": entry.ID})
		if code != http.StatusConflict || errCode(t, out) != CodeConflict {
			t.Fatalf("twice: got %d %s, want 409", code, out)
		}
		code, out = ts.call("POST", "/v1/forget", map[string]any{"id": "m-0000000000000000"})
		require.EqualValues(t, 404, code, "unknown: got %d %s, want 404", code, out)
	})
	t.Run("MethodAndPath", func(t *testing.T) {
		if code, out := ts.call("GET", "/v1/events", nil); code != http.StatusMethodNotAllowed || errCode(t, out) != CodeMethod {
			t.Fatalf("got %d %s, want 405", code, out)
		}
		if code, out := ts.call("GET", "/v2/nothing", nil); code != 404 || errCode(t, out) != CodeNotFound {
			t.Fatalf("got %d %s, want 404", code, out)
		}
	})
	t.Run("Metrics", func(t *testing.T) {
		code, out := ts.call("GET", "/v1/metrics", nil)
		text := string(out)
		for _, want := range []string{
			"# TYPE dshmem_events_appended_total counter", "dshmem_events_appended_total 3",
			"# TYPE dshmem_ingest_seconds histogram", `dshmem_ingest_seconds_bucket{le="+Inf"}`,
			"dshmem_recall_seconds_count", "dshmem_packets_served_total", `dshmem_packets_suppressed_total{reason="unknown-session"} 1`,
			"dshmem_distiller_calls_total 1", "dshmem_distiller_failures_total 0",
		} {
			require.EqualValues(t, 200, code, "metrics lack %q:\n%s", want, text)
			require.Contains(t, text, want, "metrics lack %q:\n%s", want, text)
		}
	})
}

// TestServerTooManyRequests: with every slot taken a request is 429;
// health and metrics still answer.
func TestServerTooManyRequests(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{MaxInFlight: 1})
	ts.srv.slots <- struct{}{} // one request in flight
	code, out := ts.call("POST", "/v1/search", map[string]any{"query": "x"})
	hcode, hout := ts.call("GET", "/v1/healthz", nil)
	mcode, _ := ts.call("GET", "/v1/metrics", nil)
	<-ts.srv.slots
	require.Equal(t, http.StatusTooManyRequests, code, "%s", out)
	require.Equal(t, CodeTooMany, errCode(t, out))
	require.Equal(t, 200, hcode, "healthz while the slots are full: %s", hout)
	require.Equal(t, 200, mcode, "metrics while the slots are full")
}

type failingDistiller struct{}

func (failingDistiller) Name() string  { return "failing" }
func (failingDistiller) Model() string { return "none" }
func (failingDistiller) Distill(context.Context, distill.Request) (distill.Result, error) {
	return distill.Result{}, errors.New("upstream model unreachable")
}

func TestServerDistillerFailure(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{Distiller: failingDistiller{}})
	ts.must(200, "POST", "/v1/events", []any{event("d:1", "user/message", "s1", "/p", map[string]any{"text": "we always use tabs"})}, nil)
	code, out := ts.call("POST", "/v1/checkpoint", map[string]any{"force": true})
	if code != http.StatusServiceUnavailable || errCode(t, out) != CodeDistiller || !strings.Contains(string(out), "upstream model unreachable") {
		t.Fatalf("got %d %s, want 503 distiller_failed with the reason", code, out)
	}
	// Ingest keeps working.
	var r EventsResponse
	ts.must(200, "POST", "/v1/events", []any{event("d:2", "user/message", "s1", "/p", map[string]any{"text": "more"})}, &r)
	require.EqualValues(t, 1, r.Appended, "got %+v", r)
	_, m := ts.call("GET", "/v1/metrics", nil)
	require.Contains(t, string(m), "dshmem_distiller_failures_total 1", "failure not counted:\n%s", m)
}

func TestCheckLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:0", false, true}, {"[::1]:8080", false, true}, {"localhost:1", false, true},
		{"0.0.0.0:80", false, false}, {":80", false, false}, {"192.168.1.2:80", false, false},
		{"0.0.0.0:80", true, true}, {"nonsense", false, false},
	} {
		err := CheckLoopback(tc.addr, tc.remote)
		if (err == nil) != tc.ok {
			t.Errorf("%s remote=%v: got %v, want ok=%v", tc.addr, tc.remote, err, tc.ok)
		}
	}
}

func TestServeFile(t *testing.T) {
	root := t.TempDir()
	info := ServeInfo{Addr: "127.0.0.1:1234", PID: 42, Token: "abc"}
	require.NoError(t, WriteServeFile(root, info))
	fi, err := os.Stat(filepath.Join(root, ServeFile))
	require.NoError(t, err, "got %v %v, want mode 0600", fi.Mode(), err)
	require.EqualValues(t, 0o600, fi.Mode().Perm(), "got %v %v, want mode 0600", fi.Mode(), err)
	got, err := ReadServeFile(root)
	require.NoError(t, err, "got %+v %v, want %+v", got, err, info)
	require.Equal(t, info, got, "got %+v %v, want %+v", got, err, info)
	RemoveServeFile(root, 7) // not ours: stays
	if _, err := os.Stat(filepath.Join(root, ServeFile)); err != nil {
		t.Fatalf("removed another server's file: %v", err)
	}
	RemoveServeFile(root, 42)
	if _, err := os.Stat(filepath.Join(root, ServeFile)); !os.IsNotExist(err) {
		t.Fatalf("got %v, want removed", err)
	}
}

// wsVocab gives each workspace of the isolation test words no other
// workspace uses.
var wsVocab = [5][3]string{
	{"kubernetes helm chart", "ingress controller annotations", "kubectl rollout restart"},
	{"postgres vacuum analyze", "btree index bloat", "pgbouncer pool sizing"},
	{"react hooks memo", "component render loop", "redux selector caching"},
	{"rust borrow checker", "lifetime elision rules", "cargo clippy lints"},
	{"gradle android manifest", "proguard shrink rules", "kotlin coroutine scope"},
}

func TestServerIsolation(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	owner := map[string]int{} // entry id → workspace
	for w := range 5 {
		for i, v := range wsVocab[w] {
			var en observer.Entry
			ts.must(200, "POST", "/v1/remember", map[string]any{"content": fmt.Sprintf("Team note %d: always check %s before merging", i, v),
				"title": v, "cwd": fmt.Sprintf("/work/ws%d", w), "type": "procedure", "importance": 3}, &en)
			owner[en.ID] = w
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for s := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := s % 5
			cwd := fmt.Sprintf("/work/ws%d", w)
			sid := fmt.Sprintf("iso-%d", s)
			// Each session talks about its own vocabulary and another
			// workspace's, to tempt a leak.
			other := wsVocab[(w+1)%5][s%3]
			text := fmt.Sprintf("problem with %s and also %s", wsVocab[w][s%3], other)
			evs := []any{event(sid+":0", "session/start", sid, cwd, map[string]any{"origin": "top"}),
				event(sid+":1", "user/message", sid, "", map[string]any{"text": text})}
			b, _ := json.Marshal(evs)
			code, out := ts.callNoFatal("POST", "/v1/events", b)
			if code != 200 {
				errs <- fmt.Errorf("%s events: %d %s", sid, code, out)
				return
			}
			check := func(what string, ids []string) {
				for _, id := range ids {
					if ow, ok := owner[id]; ok && ow != w {
						errs <- fmt.Errorf("%s (workspace %d): %s returned %s of workspace %d", sid, w, what, id, ow)
					}
				}
			}
			rb, _ := json.Marshal(map[string]any{"query": text, "cwd": cwd, "session": sid})
			code, out = ts.callNoFatal("POST", "/v1/recall", rb)
			var rec struct {
				Items []struct{ ID string } `json:"items"`
			}
			if code != 200 || json.Unmarshal(out, &rec) != nil {
				errs <- fmt.Errorf("%s recall: %d %s", sid, code, out)
				return
			}
			var ids []string
			for _, it := range rec.Items {
				ids = append(ids, it.ID)
			}
			check("recall", ids)
			code, out = ts.callNoFatal("GET", "/v1/context?cwd="+cwd+"&session="+sid, nil)
			if code != 200 {
				errs <- fmt.Errorf("%s context: %d %s", sid, code, out)
				return
			}
			for id, ow := range owner {
				if ow != w && strings.Contains(string(out), id) {
					errs <- fmt.Errorf("%s context holds %s of workspace %d", sid, id, ow)
				}
			}
		}()
	}
	wg.Wait()
	ts.srv.Broker().Settle()
	served := 0
	for s := range 50 {
		w := s % 5
		sid := fmt.Sprintf("iso-%d", s)
		code, out := ts.call("GET", "/v1/sessions/"+sid+"/packet", nil)
		if code == http.StatusNoContent {
			continue
		}
		var p broker.Packet
		require.EqualValues(t, 200, code, "%s packet: %d %s", sid, code, out)
		require.Nil(t, json.Unmarshal(out, &p), "%s packet: %d %s", sid, code, out)
		served++
		assert.Equal(t, sid, p.Session, "%s was served the packet of %s", sid, p.Session)
		for _, e := range p.Entries {
			assert.Equal(t, w, owner[e.ID], "%s (workspace %d) packet holds %s of workspace %d", sid, w, e.ID, owner[e.ID])
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.False(t, served < 25, "only %d of 50 sessions got a packet; the test would prove little", served)
}

func (ts *testServer) callNoFatal(method, path string, body []byte) (int, []byte) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		return 0, []byte(err.Error())
	}
	req.Header.Set("Authorization", "Bearer "+ts.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func TestContextPrefixStability(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	hashes := map[string]int{}
	for i := range 100 {
		switch i {
		case 30:
			ts.must(200, "POST", "/v1/remember", map[string]any{"content": "Always answer in English unless asked otherwise", "global": true, "type": "preference"}, nil)
		case 70:
			ts.must(200, "POST", "/v1/remember", map[string]any{"content": "Never force-push to main", "global": true, "type": "rule"}, nil)
		}
		// Things that are not stable facts happen all the time.
		sid := fmt.Sprintf("p-%d", i)
		cwd := fmt.Sprintf("/work/p%d", i%3)
		ts.must(200, "POST", "/v1/events", []any{
			event(sid+":0", "session/start", sid, cwd, map[string]any{"origin": "top"}),
			event(sid+":1", "user/message", sid, "", map[string]any{"text": fmt.Sprintf("step %d of the plan", i)}),
			event(sid+":g", "user/message", "", "", map[string]any{"text": fmt.Sprintf("global chatter %d", i)}),
		}, nil)
		if i%10 == 5 {
			ts.must(200, "POST", "/v1/remember", map[string]any{"content": fmt.Sprintf("workspace fact %d", i), "cwd": cwd}, nil)
		}
		var sc broker.SessionContext
		ts.must(200, "GET", "/v1/context?cwd="+cwd+"&session="+sid, nil, &sc)
		hashes[sc.StableHash]++
	}
	require.Len(t, hashes, 3, "got %d distinct stableHash values %v, want 3", len(hashes), hashes)
}

// brokenIndex is an index whose every read fails, as a corrupt or
// unreachable index.db would.
type brokenIndex struct{ err error }

func (b brokenIndex) Recall(context.Context, recall.Query) (*recall.Result, error) {
	return nil, b.err
}
func (b brokenIndex) SessionCwd(context.Context, string) (string, bool, error) {
	return "", false, b.err
}
func (b brokenIndex) Cursors() (map[string]uint64, error) { return nil, b.err }
func (b brokenIndex) Maintenance(context.Context, string, time.Time) ([]string, error) {
	return nil, b.err
}

func TestServerIndexFailure(t *testing.T) {
	const reason = "database disk image is malformed"
	ts := startServer(t, t.TempDir(), ServerOptions{index: brokenIndex{errors.New(reason)}})
	const cwd = "/home/u/broken"
	for _, tc := range []struct {
		name, method, path string
		body               any
	}{
		{"Recall", "POST", "/v1/recall", map[string]any{"query": "deploy", "cwd": cwd}},
		{"RecallBySession", "POST", "/v1/recall", map[string]any{"query": "deploy", "session": "s1"}},
		{"Search", "POST", "/v1/search", map[string]any{"query": "deploy"}},
		{"SearchByStream", "POST", "/v1/search", map[string]any{"query": "deploy", "stream": observer.StreamForCwd(cwd)}},
		{"ContextOfSession", "GET", "/v1/context?session=s1", nil},
		{"ContextMaintenance", "GET", "/v1/context?cwd=" + cwd, nil},
	} {
		t.Run(tc.name+"Is503WithReason", func(t *testing.T) {
			code, out := ts.call(tc.method, tc.path, tc.body)
			if code != http.StatusServiceUnavailable || errCode(t, out) != CodeIndex || !strings.Contains(string(out), reason) {
				t.Fatalf("got %d %s, want 503 %s with the reason", code, out, CodeIndex)
			}
		})
	}
	t.Run("EventsStillAppended", func(t *testing.T) {
		var r EventsResponse
		ts.must(200, "POST", "/v1/events", []any{
			event("b:1", "session/start", "s1", cwd, map[string]any{"origin": "top"}),
			event("b:2", "user/message", "s1", cwd, map[string]any{"text": "the deploy is broken"}),
		}, &r)
		require.EqualValues(t, 2, r.Appended, "got %+v, want 2 appended and no warning", r)
		require.EqualValues(t, "", r.Warning, "got %+v, want 2 appended and no warning", r)
		ts.srv.Broker().Settle()
		_, why := ts.fetch("s1", "")
		require.EqualValues(t, "none", why, "packet: got reason %q, want none (the broker's recall failed)", why)
	})
}

func TestServerTimeoutDefaults(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	h := ts.srv.http
	require.Equal(t, 30*time.Second, h.ReadTimeout, "got read %v, write %v, idle %v, header %v; want 30s, 2m, 2m, 10s as ServerOptions says", h.ReadTimeout, h.WriteTimeout, h.IdleTimeout, h.ReadHeaderTimeout)
	require.Equal(t, 2*time.Minute, h.WriteTimeout, "got read %v, write %v, idle %v, header %v; want 30s, 2m, 2m, 10s as ServerOptions says", h.ReadTimeout, h.WriteTimeout, h.IdleTimeout, h.ReadHeaderTimeout)
	require.Equal(t, 2*time.Minute, h.IdleTimeout, "got read %v, write %v, idle %v, header %v; want 30s, 2m, 2m, 10s as ServerOptions says", h.ReadTimeout, h.WriteTimeout, h.IdleTimeout, h.ReadHeaderTimeout)
	require.Equal(t, 10*time.Second, h.ReadHeaderTimeout, "got read %v, write %v, idle %v, header %v; want 30s, 2m, 2m, 10s as ServerOptions says", h.ReadTimeout, h.WriteTimeout, h.IdleTimeout, h.ReadHeaderTimeout)
	// The bounds README's Reliability section quotes.
	require.Equal(t, 10*time.Second, ts.srv.opts.BodyTimeout, "a body's deadline")
	require.Equal(t, 1024, cap(ts.srv.bodies), "bodies read at once")
	require.Equal(t, DefaultMaxInFlight, cap(ts.srv.slots), "request slots")
}

// TestServerReadTimeout: a client that sends its headers and part of a
// body, then stalls, is cut off at the read timeout instead of holding a
// connection and a request slot for ever; nothing of its body is taken.
func TestServerReadTimeout(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{ReadTimeout: 100 * time.Millisecond, WriteTimeout: time.Second, IdleTimeout: time.Second})
	require.Equal(t, 100*time.Millisecond, ts.srv.http.ReadTimeout, "timeouts not taken from the options: %v %v %v", ts.srv.http.ReadTimeout, ts.srv.http.WriteTimeout, ts.srv.http.IdleTimeout)
	require.Equal(t, time.Second, ts.srv.http.WriteTimeout, "timeouts not taken from the options: %v %v %v", ts.srv.http.ReadTimeout, ts.srv.http.WriteTimeout, ts.srv.http.IdleTimeout)
	require.Equal(t, time.Second, ts.srv.http.IdleTimeout, "timeouts not taken from the options: %v %v %v", ts.srv.http.ReadTimeout, ts.srv.http.WriteTimeout, ts.srv.http.IdleTimeout)
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	line, _ := json.Marshal(event("slow:1", "user/message", "slow", "/p", map[string]any{"text": "never finished"}))
	fmt.Fprintf(conn, "POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", ts.token, len(line)+100, line)
	// The stall: the rest of the body never comes. The server must close
	// the connection; the deadline here only keeps a broken server from
	// hanging the test.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // under the 30s default, over 100ms
	got, err := io.ReadAll(conn)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the stalled connection open (read so far: %q)", got)
	require.False(t, len(got) > 0 && !strings.HasPrefix(string(got), "HTTP/1.1 408"), "got %q, want the connection closed, or a 408 before it", got)
	var r EventsResponse
	ts.must(200, "POST", "/v1/events", []any{event("slow:1", "user/message", "slow", "/p", map[string]any{"text": "now whole"})}, &r)
	require.EqualValues(t, 1, r.Appended, "got %+v: the stalled body must not have been ingested", r)
}

// stallIndex is an index whose recall takes stall and then finds
// nothing; its other reads find nothing at once.
type stallIndex struct{ stall time.Duration }

func (s stallIndex) Recall(context.Context, recall.Query) (*recall.Result, error) {
	time.Sleep(s.stall)
	return &recall.Result{Items: []recall.Item{}, Terms: []string{}}, nil
}
func (stallIndex) SessionCwd(context.Context, string) (string, bool, error) { return "", false, nil }
func (stallIndex) Cursors() (map[string]uint64, error)                      { return map[string]uint64{}, nil }
func (stallIndex) Maintenance(context.Context, string, time.Time) ([]string, error) {
	return nil, nil
}

// TestServerWriteTimeout: a request whose answer is not written within
// the write timeout gets no answer and its connection is closed, instead
// of holding it for ever. The write deadline is set once the request is
// read, before the handler runs; the handler outlasts it by far, so the
// outcome does not depend on the machine's speed.
func TestServerWriteTimeout(t *testing.T) {
	const wt = 20 * time.Millisecond
	ts := startServer(t, t.TempDir(), ServerOptions{WriteTimeout: wt, index: stallIndex{stall: 10 * wt}})
	require.Equal(t, wt, ts.srv.http.WriteTimeout, "write timeout not taken from the options: got %v, want %v", ts.srv.http.WriteTimeout, wt)
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	body := `{"query":"deploy"}`
	fmt.Fprintf(conn, "POST /v1/search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", ts.token, len(body), body)
	// The deadline here only keeps a broken server from hanging the test.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the connection open past its write timeout (read so far: %q)", got)
	require.False(t, len(got) > 0, "got %q, want no answer: it was due after the write timeout", got)
	// The server goes on answering.
	var h Health
	ts.must(200, "GET", "/v1/healthz", nil, &h)
}
