package httpapi

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"dshmem/observer"
)

// TestScopeRoutes drives GET /v1/scopes and POST /v1/scopes/archive,
// /restore and /purge, their refusals included.
func TestScopeRoutes(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	const dirA, dirB = "/home/u/alpha", "/home/u/beta"
	ka, kb := observer.StreamForCwd(dirA), observer.StreamForCwd(dirB)
	for _, d := range []string{dirA, dirB} {
		ts.must(http.StatusOK, "POST", "/v1/remember", map[string]any{"content": "zorbulon lives in " + d, "cwd": d}, nil)
	}
	keys := func(archived string) []string {
		var resp ScopesResponse
		ts.must(http.StatusOK, "GET", "/v1/scopes?archived="+archived, nil, &resp)
		var out []string
		for _, s := range resp.Scopes {
			out = append(out, s.Key)
		}
		return out
	}
	require.ElementsMatch(t, []string{ka, kb}, keys("0"))
	require.Empty(t, keys("1"))

	var info observer.ScopeInfo
	ts.must(http.StatusOK, "POST", "/v1/scopes/archive", ScopeAPIRequest{Key: dirA + "/sub"}, &info)
	assert.True(t, info.Archived)
	assert.Equal(t, ka, info.Key)
	assert.Equal(t, dirA, info.Dir)
	assert.ElementsMatch(t, []string{ka}, keys("true"))
	assert.ElementsMatch(t, []string{kb}, keys("false"))

	var rec struct {
		Items []struct{ Scope string } `json:"items"`
	}
	ts.must(http.StatusOK, "POST", "/v1/recall", map[string]any{"query": "zorbulon", "cwd": dirA}, &rec)
	for _, it := range rec.Items {
		assert.NotEqual(t, ka, it.Scope, "recall of an archived scope")
	}

	for _, c := range []struct {
		path string
		body any
		code int
		err  string
	}{
		{"/v1/scopes/archive", ScopeAPIRequest{Key: ka}, http.StatusConflict, CodeConflict},
		{"/v1/scopes/restore", ScopeAPIRequest{Key: kb}, http.StatusConflict, CodeConflict},
		{"/v1/scopes/archive", ScopeAPIRequest{Key: "global"}, http.StatusBadRequest, CodeBadRequest},
		{"/v1/scopes/archive", ScopeAPIRequest{Key: "ws-00000000000000000000"}, http.StatusNotFound, CodeUnknownScope},
		{"/v1/scopes/archive", ScopeAPIRequest{Key: "relative/dir"}, http.StatusNotFound, CodeUnknownScope},
		{"/v1/scopes/archive", map[string]any{"key": ka, "why": "x"}, http.StatusBadRequest, CodeBadRequest},
		{"/v1/scopes/purge", ScopeAPIRequest{Key: kb}, http.StatusBadRequest, CodeBadRequest},
		{"/v1/scopes/purge", ScopeAPIRequest{Key: kb, Confirm: ka}, http.StatusBadRequest, CodeBadRequest},
		{"/v1/scopes/purge", ScopeAPIRequest{Key: "global", Confirm: "global"}, http.StatusBadRequest, CodeBadRequest},
	} {
		code, out := ts.call("POST", c.path, c.body)
		assert.Equal(t, c.code, code, "%s %v: %s", c.path, c.body, out)
		assert.Equal(t, c.err, errCode(t, out), "%s %v: %s", c.path, c.body, out)
	}
	code, out := ts.call("GET", "/v1/scopes?archived=maybe", nil)
	assert.Equal(t, http.StatusBadRequest, code, "%s", out)
	code, _ = ts.call("POST", "/v1/scopes", "{}")
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	code, _ = ts.callWith("", "GET", "/v1/scopes", nil)
	assert.Equal(t, http.StatusUnauthorized, code)

	ts.must(http.StatusOK, "POST", "/v1/scopes/restore", ScopeAPIRequest{Key: ka}, &info)
	assert.False(t, info.Archived)

	var rep observer.PurgeReport
	ts.must(http.StatusOK, "POST", "/v1/scopes/purge", ScopeAPIRequest{Key: kb, Confirm: kb}, &rep)
	assert.Equal(t, kb, rep.Key)
	assert.Equal(t, 1, rep.Events)
	assert.NotContains(t, keys("0"), kb)
	code, out = ts.call("POST", "/v1/scopes/purge", ScopeAPIRequest{Key: kb, Confirm: kb})
	assert.Equal(t, http.StatusNotFound, code, "a purged scope is gone: %s", out)
}

// TestArchivedScopeGetsNoPackets: a session in an archived workspace is
// served no packet of the workspace's entries; once restored, it is.
func TestArchivedScopeGetsNoPackets(t *testing.T) {
	now := time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)
	ts := startServer(t, t.TempDir(), ServerOptions{Now: func() time.Time { return now }})
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
	ts.must(200, "POST", "/v1/scopes/archive", ScopeAPIRequest{Key: cwd}, nil)
	push("a", "session/start", map[string]any{"origin": "top"})
	v := push("a", "user/message", map[string]any{"text": "the api server fails to start, migrations missing?"})
	p, why := ts.fetch("a", fmt.Sprintf("?contextVersion=%d&step=0", v))
	if p != nil {
		for _, e := range p.Entries {
			assert.NotEqual(t, en.ID, e.ID, "a packet of an archived scope: %+v (%s)", p, why)
		}
	}

	ts.must(200, "POST", "/v1/scopes/restore", ScopeAPIRequest{Key: cwd}, nil)
	push("b", "session/start", map[string]any{"origin": "top"})
	v = push("b", "user/message", map[string]any{"text": "the api server fails to start, migrations missing?"})
	p, why = ts.fetch("b", fmt.Sprintf("?contextVersion=%d&step=0", v))
	require.NotNil(t, p, "restored: got nothing (%s), want a packet", why)
	require.NotEmpty(t, p.Entries)
	assert.Equal(t, en.ID, p.Entries[0].ID)
}
