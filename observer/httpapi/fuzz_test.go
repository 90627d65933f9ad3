package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"dshmem/observer"
)

var (
	fuzzOnce sync.Once
	fuzzSrv  *Server
	fuzzEng  *observer.Engine
)

// FuzzHandlers sends any method, path and body, with the right token, to
// the API: no input panics or answers 500, and every answer of a /v1/
// route but metrics is a JSON object. One server serves the whole run,
// so what earlier inputs stored is there for later ones.
func FuzzHandlers(f *testing.F) {
	routes := []string{"/v1/events", "/v1/recall", "/v1/search", "/v1/context?cwd=/home/u/p", "/v1/checkpoint",
		"/v1/remember", "/v1/forget", "/v1/sessions/s1/packet", "/v1/sessions/s1/prompt", "/v1/healthz", "/v1/metrics"}
	for i, r := range routes {
		f.Add(uint8(i), r, []byte(`{}`))
	}
	f.Add(uint8(1), "/v1/events", []byte(`[{"id":"a","type":"user/message","time":"2026-08-18T10:00:00Z","session":"s1","cwd":"/home/u/p","data":{"text":"hi"}}]`))
	f.Add(uint8(1), "/v1/remember", []byte(`{"cwd":"/home/u/p","content":"Use pnpm."}`))
	f.Add(uint8(1), "/v1/recall", []byte(`{"query":"pnpm","cwd":"/home/u/p"}`))
	f.Add(uint8(1), "/v1/sessions/..%2F..%2Fetc/packet", []byte(nil))
	f.Add(uint8(1), "/v1/events", []byte("{\"id\":\"\xff\",\"type\":\"user/message\"}\n\x00"))
	f.Add(uint8(1), "/v1/search", []byte(strings.Repeat("[", 20000)))
	methods := []string{"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"}
	dir := f.TempDir()
	// Before the directory is removed: stop the server and close the
	// engine, whose background writers would otherwise still be writing
	// into it ("directory not empty" from the TempDir cleanup).
	f.Cleanup(func() {
		if fuzzSrv != nil {
			fuzzSrv.Shutdown(context.Background())
			fuzzEng.Close()
		}
		fuzzOnce, fuzzSrv, fuzzEng = sync.Once{}, nil, nil
	})
	f.Fuzz(func(t *testing.T, m uint8, path string, body []byte) {
		fuzzOnce.Do(func() {
			eng, err := observer.Open(context.Background(), dir, observer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			fuzzEng = eng
			fuzzSrv, err = NewServer(eng, ServerOptions{AutoCheckpoint: -1})
			if err != nil {
				t.Fatal(err)
			}
		})
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\t") {
			return // not a request line a client can send
		}
		req, err := http.NewRequest(methods[int(m)%len(methods)], "http://x"+path, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer "+fuzzSrv.Token())
		rec := httptest.NewRecorder()
		fuzzSrv.Handler().ServeHTTP(rec, req)
		if rec.Code == http.StatusInternalServerError {
			t.Fatalf("%s %s %q: 500 %s", req.Method, path, body, rec.Body.Bytes())
		}
		if strings.HasPrefix(req.URL.Path, "/v1/") && req.URL.Path != "/v1/metrics" && req.Method != "HEAD" && rec.Body.Len() > 0 {
			var v map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Fatalf("%s %s: answer %d is not a JSON object: %q", req.Method, path, rec.Code, rec.Body.Bytes())
			}
		}
	})
}
