package observer

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

	"dshmem/observer/distill"
	"dshmem/sqlstore/recall"
)

// testServer is a real server listening on 127.0.0.1:0 over a fresh root.
type testServer struct {
	t     *testing.T
	root  string
	eng   *Engine
	srv   *Server
	url   string
	token string
	done  chan error
}

func startServer(t *testing.T, root string, opts ServerOptions) *testServer {
	t.Helper()
	ctx := context.Background()
	eng, err := Open(ctx, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
	if err := ts.srv.Shutdown(ctx); err != nil {
		ts.t.Errorf("shutdown: %v", err)
	}
	if err := <-ts.done; err != nil {
		ts.t.Errorf("serve: %v", err)
	}
	if err := ts.eng.Close(); err != nil {
		ts.t.Errorf("close: %v", err)
	}
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
		if err != nil {
			ts.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp.StatusCode, out
}

// must sends a request, checks its status and decodes the answer into v.
func (ts *testServer) must(want int, method, path string, body, v any) {
	ts.t.Helper()
	code, out := ts.call(method, path, body)
	if code != want {
		ts.t.Fatalf("%s %s: got %d, want %d: %s", method, path, code, want, out)
	}
	if v != nil {
		if err := json.Unmarshal(out, v); err != nil {
			ts.t.Fatalf("%s %s: decode %s: %v", method, path, out, err)
		}
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
		if !h.OK || h.API != "v1" || h.PID != os.Getpid() {
			t.Fatalf("got %+v", h)
		}
	})
	var resp EventsResponse
	t.Run("EventsArray", func(t *testing.T) {
		evs := []any{
			event("r:1", "session/start", "s1", cwd, map[string]any{"origin": "top"}),
			event("r:2", "user/message", "s1", "", map[string]any{"text": "the deploy uses blue green rollout"}),
			map[string]any{"id": "r:3", "type": "user/message", "session": "s1"}, // no time
		}
		ts.must(200, "POST", "/v1/events", evs, &resp)
		if resp.Appended != 2 || resp.Rejected != 1 || len(resp.Results) != 3 {
			t.Fatalf("got %+v", resp)
		}
		if r := resp.Results[2]; r.Status != StatusRejected || r.Field != "time" || r.Line != 3 {
			t.Fatalf("got %+v, want a rejection of field time on line 3", r)
		}
		if resp.Sessions["s1"] != 2 {
			t.Fatalf("got contextVersion %d, want 2", resp.Sessions["s1"])
		}
	})
	t.Run("EventsJSONLDuplicates", func(t *testing.T) {
		b1, _ := json.Marshal(event("r:2", "user/message", "s1", "", map[string]any{"text": "again"}))
		b2, _ := json.Marshal(event("r:4", "assistant/message", "s1", "", map[string]any{"text": "ok"}))
		var r EventsResponse
		ts.must(200, "POST", "/v1/events", string(b1)+"\n\n"+string(b2)+"\n", &r)
		if r.Duplicates != 1 || r.Appended != 1 || r.Results[1].Line != 3 {
			t.Fatalf("got %+v", r)
		}
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
		big := bytes.Repeat([]byte("x"), MaxIngestBytes+10)
		code, out := ts.call("POST", "/v1/events", big)
		if code != http.StatusRequestEntityTooLarge || errCode(t, out) != CodeTooLarge {
			t.Fatalf("got %d %s, want 413", code, out)
		}
		code, out = ts.call("POST", "/v1/recall", bytes.Repeat([]byte(" "), MaxRequestBytes+1))
		if code != http.StatusRequestEntityTooLarge {
			t.Fatalf("recall: got %d %s, want 413", code, out)
		}
	})
	var entry Entry
	t.Run("Remember", func(t *testing.T) {
		ts.must(200, "POST", "/v1/remember", map[string]any{"content": "Deploys use a blue green rollout behind the load balancer", "cwd": cwd, "type": "decision"}, &entry)
		if !strings.HasPrefix(entry.ID, "m-") || entry.Scope != StreamForCwd(cwd) {
			t.Fatalf("got %+v", entry)
		}
		code, out := ts.call("POST", "/v1/remember", map[string]any{"content": "sk-ant-api03-" + strings.Repeat("A", 90), "global": true})
		if code != 400 {
			t.Fatalf("a bare secret: got %d %s, want 400", code, out)
		}
		code, out = ts.call("POST", "/v1/remember", `{"content":"x","cwd":"/p","colour":"red"}`)
		if code != 400 || !strings.Contains(string(out), "colour") {
			t.Fatalf("unknown field: got %d %s, want 400 naming it", code, out)
		}
	})
	t.Run("Recall", func(t *testing.T) {
		var res struct {
			Items []struct{ ID, Scope string } `json:"items"`
		}
		ts.must(200, "POST", "/v1/recall", map[string]any{"query": "blue green rollout", "cwd": cwd, "session": "s1"}, &res)
		if len(res.Items) == 0 || res.Items[0].ID != entry.ID {
			t.Fatalf("got %+v, want %s first", res.Items, entry.ID)
		}
		code, out := ts.call("POST", "/v1/recall", `{"query":`)
		if code != 400 {
			t.Fatalf("malformed: got %d %s", code, out)
		}
		code, out = ts.call("POST", "/v1/recall", map[string]any{"query": "x", "stream": "ws-00000000000000000000"})
		if code != 404 || errCode(t, out) != CodeUnknownScope {
			t.Fatalf("unknown scope: got %d %s, want 404 unknown_scope", code, out)
		}
		code, out = ts.call("POST", "/v1/recall", map[string]any{"query": "x", "stream": "nope"})
		if code != 400 {
			t.Fatalf("bad stream: got %d %s, want 400", code, out)
		}
	})
	t.Run("Search", func(t *testing.T) {
		var res struct {
			Items []struct{ Kind, Scope string } `json:"items"`
		}
		ts.must(200, "POST", "/v1/search", map[string]any{"query": "blue green", "stream": StreamForCwd(cwd)}, &res)
		if len(res.Items) == 0 || res.Items[0].Kind != "episodic" {
			t.Fatalf("got %+v", res.Items)
		}
		code, out := ts.call("POST", "/v1/search", map[string]any{"query": "x", "stream": "ws-11111111111111111111"})
		if code != 404 || errCode(t, out) != CodeUnknownScope {
			t.Fatalf("unknown scope: got %d %s", code, out)
		}
		code, _ = ts.call("POST", "/v1/search", map[string]any{"query": "x", "kind": "dreams"})
		if code != 400 {
			t.Fatalf("bad kind: got %d", code)
		}
	})
	t.Run("Context", func(t *testing.T) {
		var sc SessionContext
		ts.must(200, "GET", "/v1/context?cwd="+cwd+"&session=s1&origin=top", nil, &sc)
		if !strings.Contains(sc.Workspace, "blue green") || !strings.Contains(sc.Workspace, "not instructions") || len(sc.StableHash) != 64 {
			t.Fatalf("got %+v", sc)
		}
		code, _ := ts.call("GET", "/v1/context?cwd=relative/dir", nil)
		if code != 400 {
			t.Fatalf("relative cwd: got %d, want 400", code)
		}
	})
	t.Run("Packet", func(t *testing.T) {
		ts.srv.Broker().Settle()
		code, out := ts.call("GET", "/v1/sessions/nobody/packet", nil)
		if code != http.StatusNoContent {
			t.Fatalf("unknown session: got %d %s, want 204", code, out)
		}
		code, out = ts.call("GET", "/v1/sessions/s1/packet?contextVersion=x", nil)
		if code != 400 {
			t.Fatalf("bad contextVersion: got %d %s", code, out)
		}
	})
	t.Run("Checkpoint", func(t *testing.T) {
		var res CheckpointResponse
		ts.must(200, "POST", "/v1/checkpoint", map[string]any{"cwd": cwd, "force": true}, &res)
		if len(res.Results) != 1 || res.Results[0].Session != "s1" {
			t.Fatalf("got %+v", res)
		}
		code, out := ts.call("POST", "/v1/checkpoint", map[string]any{"stream": "ws-22222222222222222222"})
		if code != 404 {
			t.Fatalf("unknown scope: got %d %s", code, out)
		}
	})
	t.Run("Forget", func(t *testing.T) {
		var en Entry
		ts.must(200, "POST", "/v1/forget", map[string]any{"id": entry.ID, "reason": "test"}, &en)
		if en.Status != "forgotten" {
			t.Fatalf("got %+v", en)
		}
		code, out := ts.call("POST", "/v1/forget", map[string]any{"id": entry.ID})
		if code != http.StatusConflict || errCode(t, out) != CodeConflict {
			t.Fatalf("twice: got %d %s, want 409", code, out)
		}
		code, out = ts.call("POST", "/v1/forget", map[string]any{"id": "m-0000000000000000"})
		if code != 404 {
			t.Fatalf("unknown: got %d %s, want 404", code, out)
		}
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
			if code != 200 || !strings.Contains(text, want) {
				t.Fatalf("metrics lack %q:\n%s", want, text)
			}
		}
	})
}

func TestServerTooManyRequests(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{MaxInFlight: 1})
	ts.srv.slots <- struct{}{} // one request in flight
	code, out := ts.call("GET", "/v1/healthz", nil)
	<-ts.srv.slots
	if code != http.StatusTooManyRequests || errCode(t, out) != CodeTooMany {
		t.Fatalf("got %d %s, want 429", code, out)
	}
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
	if r.Appended != 1 {
		t.Fatalf("got %+v", r)
	}
	_, m := ts.call("GET", "/v1/metrics", nil)
	if !strings.Contains(string(m), "dshmem_distiller_failures_total 1") {
		t.Fatalf("failure not counted:\n%s", m)
	}
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
	if err := WriteServeFile(root, info); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, ServeFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("got %v %v, want mode 0600", fi.Mode(), err)
	}
	got, err := ReadServeFile(root)
	if err != nil || got != info {
		t.Fatalf("got %+v %v, want %+v", got, err, info)
	}
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
			var en Entry
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
		var p Packet
		if code != 200 || json.Unmarshal(out, &p) != nil {
			t.Fatalf("%s packet: %d %s", sid, code, out)
		}
		served++
		if p.Session != sid {
			t.Errorf("%s was served the packet of %s", sid, p.Session)
		}
		for _, e := range p.Entries {
			if owner[e.ID] != w {
				t.Errorf("%s (workspace %d) packet holds %s of workspace %d", sid, w, e.ID, owner[e.ID])
			}
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if served < 25 {
		t.Fatalf("only %d of 50 sessions got a packet; the test would prove little", served)
	}
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
		var sc SessionContext
		ts.must(200, "GET", "/v1/context?cwd="+cwd+"&session="+sid, nil, &sc)
		hashes[sc.StableHash]++
	}
	if len(hashes) != 3 {
		t.Fatalf("got %d distinct stableHash values %v, want 3", len(hashes), hashes)
	}
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
		{"SearchByStream", "POST", "/v1/search", map[string]any{"query": "deploy", "stream": StreamForCwd(cwd)}},
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
		if r.Appended != 2 || r.Warning != "" {
			t.Fatalf("got %+v, want 2 appended and no warning", r)
		}
		ts.srv.Broker().Settle()
		if _, why := ts.fetch("s1", ""); why != "none" {
			t.Fatalf("packet: got reason %q, want none (the broker's recall failed)", why)
		}
	})
}

func TestServerTimeoutDefaults(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	h := ts.srv.http
	if h.ReadTimeout != 30*time.Second || h.WriteTimeout != 2*time.Minute || h.IdleTimeout != 2*time.Minute || h.ReadHeaderTimeout != 10*time.Second {
		t.Fatalf("got read %v, write %v, idle %v, header %v; want 30s, 2m, 2m, 10s as ServerOptions says",
			h.ReadTimeout, h.WriteTimeout, h.IdleTimeout, h.ReadHeaderTimeout)
	}
}

// TestServerReadTimeout: a client that sends its headers and part of a
// body, then stalls, is cut off at the read timeout instead of holding a
// connection and a request slot for ever; nothing of its body is taken.
func TestServerReadTimeout(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{ReadTimeout: 100 * time.Millisecond, WriteTimeout: time.Second, IdleTimeout: time.Second})
	if ts.srv.http.ReadTimeout != 100*time.Millisecond || ts.srv.http.WriteTimeout != time.Second || ts.srv.http.IdleTimeout != time.Second {
		t.Fatalf("timeouts not taken from the options: %v %v %v", ts.srv.http.ReadTimeout, ts.srv.http.WriteTimeout, ts.srv.http.IdleTimeout)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	line, _ := json.Marshal(event("slow:1", "user/message", "slow", "/p", map[string]any{"text": "never finished"}))
	fmt.Fprintf(conn, "POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", ts.token, len(line)+100, line)
	// The stall: the rest of the body never comes. The server must close
	// the connection; the deadline here only keeps a broken server from
	// hanging the test.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // under the 30s default, over 100ms
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the stalled connection open (read so far: %q)", got)
	}
	if len(got) > 0 && !strings.HasPrefix(string(got), "HTTP/1.1 400") {
		t.Fatalf("got %q, want the connection closed, or a 400 before it", got)
	}
	var r EventsResponse
	ts.must(200, "POST", "/v1/events", []any{event("slow:1", "user/message", "slow", "/p", map[string]any{"text": "now whole"})}, &r)
	if r.Appended != 1 {
		t.Fatalf("got %+v: the stalled body must not have been ingested", r)
	}
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
	if ts.srv.http.WriteTimeout != wt {
		t.Fatalf("write timeout not taken from the options: got %v, want %v", ts.srv.http.WriteTimeout, wt)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"query":"deploy"}`
	fmt.Fprintf(conn, "POST /v1/search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", ts.token, len(body), body)
	// The deadline here only keeps a broken server from hanging the test.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open past its write timeout (read so far: %q)", got)
	}
	if len(got) > 0 {
		t.Fatalf("got %q, want no answer: it was due after the write timeout", got)
	}
	// The server goes on answering.
	var h Health
	ts.must(200, "GET", "/v1/healthz", nil, &h)
}
