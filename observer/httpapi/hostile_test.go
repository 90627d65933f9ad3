package httpapi

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowClients opens n connections that each send their headers and the
// start of a body, then stall. It returns when the server has begun
// reading every body.
func slowClients(t *testing.T, ts *testServer, n int) {
	t.Helper()
	for i := range n {
		conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST /v1/search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n{\"query\":\"slow %d", ts.token, i)
	}
	// Ready signal: every stalled body holds one of the body places.
	require.Eventually(t, func() bool { return len(ts.srv.bodies) == n }, 10*time.Second, time.Millisecond,
		"the server began reading %d of %d bodies", len(ts.srv.bodies), n)
}

// TestSlowBodiesHoldNoSlot: clients that send their bodies slowly hold
// no request slot, so with more of them than slots every other request —
// health, a context, a search with its body sent at once — is answered.
func TestSlowBodiesHoldNoSlot(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{MaxInFlight: 4, BodyTimeout: time.Minute})
	slowClients(t, ts, 20)
	assert.Empty(t, ts.srv.slots, "a stalled body holds a request slot")
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/healthz", nil},
		{"GET", "/v1/metrics", nil},
		{"GET", "/v1/context?cwd=/home/u/p", nil},
		{"POST", "/v1/search", map[string]any{"query": "anything"}},
	} {
		code, out := ts.call(c.method, c.path, c.body)
		assert.Equal(t, 200, code, "%s %s beside 20 slow bodies: %s", c.method, c.path, out)
	}
}

// TestBodyReadsAreBounded: beyond MaxBodyReads a new body is refused at
// once (429) while requests without one are answered, and a stalled body
// is cut off at BodyTimeout with 408.
func TestBodyReadsAreBounded(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{MaxBodyReads: 5, BodyTimeout: 2 * time.Second})
	slowClients(t, ts, 5)
	code, out := ts.call("POST", "/v1/search", map[string]any{"query": "x"})
	assert.Equal(t, http.StatusTooManyRequests, code, "%s", out)
	assert.Contains(t, string(out), "request bodies are being received")
	code, _ = ts.call("GET", "/v1/healthz", nil)
	assert.Equal(t, 200, code)
	// The stalled ones time out and free their places.
	require.Eventually(t, func() bool { return len(ts.srv.bodies) == 0 }, 20*time.Second, 10*time.Millisecond)
	code, out = ts.call("POST", "/v1/search", map[string]any{"query": "x"})
	assert.Equal(t, 200, code, "%s", out)
}

// TestUncleanPathsRefused: a path with . or .. parts or doubled slashes
// gets a JSON 400 naming the clean form (ServeMux would answer an HTML
// redirect), and reaches no route.
func TestUncleanPathsRefused(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	for _, p := range []string{"/v1/.", "/v1/../v1/healthz", "/v1//healthz", "/v1/sessions/../../etc/packet", "/ui/./"} {
		req, err := http.NewRequest("GET", ts.url+p, nil)
		require.NoError(t, err)
		req.URL.Opaque = p // send it as written
		req.Header.Set("Authorization", "Bearer "+ts.token)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", p, body)
		assert.Contains(t, string(body), "not in its clean form", "%s", p)
	}
	code, _ := ts.call("GET", "/v1/healthz", nil)
	assert.Equal(t, 200, code)
}
