package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/observer/ui"
	"dshmem/replay"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const projDir = "/home/u/uiproj"

// clock is a settable clock for links and sessions.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// site is a page over a real engine, served by httptest.
type site struct {
	t     *testing.T
	eng   *observer.Engine
	page  *ui.Page
	srv   *httptest.Server
	clock *clock
	ws    string // the workspace scope's key
	entry observer.Entry
}

func newSite(t *testing.T, mem func(*observer.Engine) ui.Memory) *site {
	t.Helper()
	ctx := context.Background()
	eng, err := observer.Open(ctx, t.TempDir(), observer.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { eng.Close() })
	en, err := eng.Remember(ctx, observer.RememberRequest{Cwd: projDir, Content: "We deploy with make ship", Title: "Deploying", Type: "procedure"})
	require.NoError(t, err)
	_, err = eng.Remember(ctx, observer.RememberRequest{Content: "I prefer short answers", Type: "preference"})
	require.NoError(t, err)
	require.NoError(t, eng.WriteFiles(ctx))
	c := &clock{t: time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)}
	var m ui.Memory = eng
	if mem != nil {
		m = mem(eng)
	}
	p := ui.New(m, ui.Options{Now: c.now})
	s := &site{t: t, eng: eng, page: p, srv: httptest.NewServer(p), clock: c, ws: en.Scope, entry: en}
	t.Cleanup(s.srv.Close)
	return s
}

// browser is a client with a cookie jar that does not follow redirects.
type browser struct {
	s    *site
	c    *http.Client
	csrf string
}

func (s *site) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{s: s, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// login follows a fresh link and fetches the CSRF token.
func (s *site) login() *browser {
	s.t.Helper()
	b := s.browser()
	link, err := s.page.NewLink(s.srv.URL)
	require.NoError(s.t, err)
	resp, _ := b.get(link.URL)
	require.Equal(s.t, http.StatusSeeOther, resp.StatusCode)
	var sess ui.SessionResponse
	b.json(http.StatusOK, "GET", "/ui/api/session", nil, &sess)
	require.NotEmpty(s.t, sess.CSRF)
	b.csrf = sess.CSRF
	return b
}

func (b *browser) get(u string) (*http.Response, string) {
	b.s.t.Helper()
	resp, err := b.c.Get(u)
	require.NoError(b.s.t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// do sends a request as the page's script does (same origin, the CSRF
// token on POSTs) after edit changes it.
func (b *browser) do(method, path string, body any, edit func(*http.Request)) (*http.Response, []byte) {
	b.s.t.Helper()
	var rd io.Reader
	switch body := body.(type) {
	case nil:
	case []byte: // sent as it is
		rd = bytes.NewReader(body)
	default:
		raw, err := json.Marshal(body)
		require.NoError(b.s.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.s.srv.URL+path, rd)
	require.NoError(b.s.t, err)
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(ui.CSRFHeader, b.csrf)
		req.Header.Set("Origin", b.s.srv.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	if edit != nil {
		edit(req)
	}
	resp, err := b.c.Do(req)
	require.NoError(b.s.t, err)
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, out
}

func (b *browser) json(code int, method, path string, body, out any) []byte {
	b.s.t.Helper()
	resp, raw := b.do(method, path, body, nil)
	require.Equal(b.s.t, code, resp.StatusCode, "%s %s: got %d %s", method, path, resp.StatusCode, raw)
	if out != nil {
		require.NoError(b.s.t, json.Unmarshal(raw, out), "%s %s: %s", method, path, raw)
	}
	return raw
}

func TestLoginLink(t *testing.T) {
	s := newSite(t, nil)
	link, err := s.page.NewLink(s.srv.URL)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(link.URL, s.srv.URL+ui.LoginPath+"?t="), "got %s", link.URL)
	exp, err := time.Parse(time.RFC3339, link.Expires)
	require.NoError(t, err)
	assert.Equal(t, s.clock.now().Add(ui.DefaultLinkTTL), exp, "got expiry %s", link.Expires)

	b := s.browser()
	t.Run("OK", func(t *testing.T) {
		resp, _ := b.get(link.URL)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		assert.Equal(t, "/ui/", resp.Header.Get("Location"))
		var got *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == ui.CookieName {
				got = c
			}
		}
		require.NotNil(t, got, "no session cookie in %v", resp.Header["Set-Cookie"])
		assert.True(t, got.HttpOnly, "cookie %s: want HttpOnly", got)
		assert.Equal(t, http.SameSiteStrictMode, got.SameSite, "cookie %s: want SameSite=Strict", got)
		assert.Equal(t, "/ui/", got.Path, "cookie %s", got)
		assert.Len(t, got.Value, 64, "cookie %s: want 32 random bytes", got)
		resp, body := b.get(s.srv.URL + "/ui/")
		require.Equal(t, http.StatusOK, resp.StatusCode, "the page after login: %s", body)
		assert.Contains(t, body, `<nav id="picker"`, "got %s", body)
	})
	t.Run("ErrUsedTwice", func(t *testing.T) {
		other := s.browser()
		resp, body := other.get(link.URL)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "got %s", body)
		assert.Contains(t, body, "already used", "got %s", body)
		assert.Empty(t, resp.Cookies(), "a spent link set a cookie")
		resp, _ = other.get(s.srv.URL + "/ui/")
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the page let in a browser whose link was spent")
	})
	t.Run("ErrExpired", func(t *testing.T) {
		link, err := s.page.NewLink(s.srv.URL)
		require.NoError(t, err)
		s.clock.add(ui.DefaultLinkTTL)
		resp, body := s.browser().get(link.URL)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "got %s", body)
		assert.Contains(t, body, "expired", "got %s", body)
		assert.Contains(t, body, "dshmem ui", "got %s: want the way to a new link", body)
	})
	t.Run("ErrUnknownToken", func(t *testing.T) {
		resp, body := s.browser().get(s.srv.URL + ui.LoginPath + "?t=" + url.QueryEscape("<script>alert(1)</script>"))
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "got %s", body)
		assert.NotContains(t, body, "<script>alert", "the refusal echoes the token")
	})
	t.Run("SessionExpires", func(t *testing.T) {
		b := s.login()
		s.clock.add(ui.DefaultSessionTTL)
		resp, _ := b.do("GET", "/ui/api/scopes", nil, nil)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a session outlived its TTL")
	})
}

func TestNeedsLogin(t *testing.T) {
	s := newSite(t, nil)
	b := s.browser()
	resp, body := b.get(s.srv.URL + "/ui/")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, body, "dshmem ui", "the login page should say how to log in: %s", body)
	assert.NotContains(t, body, "make ship", "the login page shows memory")
	for _, path := range []string{"/ui/api/scopes", "/ui/api/scopes/global/entries", "/ui/api/entries/" + s.entry.ID, "/ui/api/search?q=deploy"} {
		resp, raw := b.do("GET", path, nil, nil)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s without a session: %s", path, raw)
		assert.NotContains(t, string(raw), "make ship", "%s without a session", path)
	}
	// The static files hold no data and are served to anyone.
	resp, body = b.get(s.srv.URL + "/ui/app.js")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/javascript; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.NotContains(t, body, "innerHTML", "the script must build the page with textContent")
}

func TestHeaders(t *testing.T) {
	s := newSite(t, nil)
	b := s.login()
	for _, path := range []string{"/ui/", "/ui/app.css", "/ui/api/scopes", "/ui/nope"} {
		resp, _ := b.do("GET", path, nil, nil)
		h := resp.Header
		assert.Equal(t, ui.ContentSecurityPolicy, h.Get("Content-Security-Policy"), "%s", path)
		assert.Contains(t, h.Get("Content-Security-Policy"), "script-src 'self'", "%s", path)
		assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), "%s", path)
		assert.Equal(t, "DENY", h.Get("X-Frame-Options"), "%s", path)
		assert.Equal(t, "no-referrer", h.Get("Referrer-Policy"), "%s", path)
		assert.Equal(t, "no-store", h.Get("Cache-Control"), "%s", path)
	}
}

// TestCSRF: a change without the session's token, with a wrong one, or
// that another origin started is refused with 403 and writes nothing.
func TestCSRF(t *testing.T) {
	s := newSite(t, nil)
	b := s.login()
	path := "/ui/api/scopes/" + s.ws + "/remember"
	body := ui.RememberRequest{Content: "a change nobody asked for"}
	seq := func() uint64 { return s.eng.Log().LastSeq(s.ws) }
	before := seq()
	for name, edit := range map[string]func(*http.Request){
		"ErrNoToken":       func(r *http.Request) { r.Header.Del(ui.CSRFHeader) },
		"ErrWrongToken":    func(r *http.Request) { r.Header.Set(ui.CSRFHeader, strings.Repeat("0", 64)) },
		"ErrShortToken":    func(r *http.Request) { r.Header.Set(ui.CSRFHeader, b.csrf[:10]) },
		"ErrCrossSiteOrig": func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") },
		"ErrOtherPortOrig": func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1:1") },
		"ErrNullOrigin":    func(r *http.Request) { r.Header.Set("Origin", "null") },
		"ErrSecFetchCross": func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
		"ErrSecFetchSame":  func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") },
		"ErrFormNoToken": func(r *http.Request) {
			r.Header.Del(ui.CSRFHeader)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		},
		"ErrOtherSessToken": func(r *http.Request) { r.Header.Set(ui.CSRFHeader, s.login().csrf) },
	} {
		t.Run(name, func(t *testing.T) {
			resp, raw := b.do("POST", path, body, edit)
			require.Equal(t, http.StatusForbidden, resp.StatusCode, "got %d %s", resp.StatusCode, raw)
			assert.Equal(t, before, seq(), "a refused change was written")
		})
	}
	t.Run("ErrNoSession", func(t *testing.T) {
		anon := s.browser()
		anon.csrf = b.csrf
		resp, raw := anon.do("POST", path, body, nil)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "got %d %s", resp.StatusCode, raw)
		assert.Equal(t, before, seq(), "a change without a session was written")
	})
	t.Run("ErrReadCrossSite", func(t *testing.T) {
		resp, raw := b.do("GET", "/ui/api/scopes/"+s.ws+"/entries", nil, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") })
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "got %d %s", resp.StatusCode, raw)
	})
	t.Run("OK", func(t *testing.T) {
		var en observer.Entry
		b.json(http.StatusOK, "POST", path, body, &en)
		assert.Equal(t, before+1, seq(), "the change with the token was not written")
	})
	t.Run("Logout", func(t *testing.T) {
		b.json(http.StatusOK, "POST", "/ui/api/logout", nil, nil)
		resp, _ := b.do("GET", "/ui/api/scopes", nil, nil)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the session outlived its logout")
	})
}

// TestRoutes: each read and write route's JSON, against the engine.
func TestRoutes(t *testing.T) {
	ctx := context.Background()
	s := newSite(t, nil)
	b := s.login()

	var scopes ui.ScopesResponse
	b.json(http.StatusOK, "GET", "/ui/api/scopes", nil, &scopes)
	keys := map[string]observer.ScopeInfo{}
	for _, si := range scopes.Scopes {
		keys[si.Key] = si
	}
	require.Contains(t, keys, s.ws, "got %+v", scopes)
	require.Contains(t, keys, observer.GlobalStream, "got %+v", scopes)
	assert.Equal(t, projDir, keys[s.ws].Dir, "got %+v", keys[s.ws])
	assert.Equal(t, 1, keys[s.ws].Entries["active"], "got %+v", keys[s.ws])
	assert.False(t, scopes.Archived)

	var sc ui.ScopeResponse
	b.json(http.StatusOK, "GET", "/ui/api/scopes/"+s.ws, nil, &sc)
	assert.Equal(t, s.ws, sc.Scope.Key)
	assert.Equal(t, "scopes/"+s.ws+"/memory_summary.md", sc.SummaryPath)
	assert.Contains(t, sc.Summary, "make ship", "the summary: %q", sc.Summary)
	b.json(http.StatusOK, "GET", "/ui/api/scopes/global", nil, &sc)
	assert.Equal(t, "global.md", sc.SummaryPath)
	assert.Contains(t, sc.Summary, "short answers", "global.md: %q", sc.Summary)

	var added observer.Entry
	b.json(http.StatusOK, "POST", "/ui/api/scopes/"+s.ws+"/remember", ui.RememberRequest{Content: "Tests run with go test ./...", Type: "procedure"}, &added)
	assert.Equal(t, s.ws, added.Scope, "remembered into %s, want %s", added.Scope, s.ws)
	var revised observer.Entry
	b.json(http.StatusOK, "POST", "/ui/api/entries/"+added.ID+"/revise", ui.ReviseRequest{Content: "Tests run with go test -race ./...", Reason: "race detector"}, &revised)
	assert.Equal(t, "Tests run with go test -race ./...", revised.Content)
	assert.EqualValues(t, 2, revised.Version)
	var forgot observer.Entry
	b.json(http.StatusOK, "POST", "/ui/api/entries/"+s.entry.ID+"/forget", ui.ForgetRequest{Reason: "we ship with CI now"}, &forgot)
	assert.Equal(t, "forgotten", forgot.Status)

	for status, want := range map[string][]string{
		"active":    {added.ID},
		"forgotten": {s.entry.ID},
		"conflict":  {},
		"all":       {s.entry.ID, added.ID},
		"":          {s.entry.ID, added.ID},
	} {
		var es ui.EntriesResponse
		b.json(http.StatusOK, "GET", "/ui/api/scopes/"+s.ws+"/entries?status="+status, nil, &es)
		var got []string
		for _, e := range es.Entries {
			got = append(got, e.ID)
		}
		assert.ElementsMatch(t, want, got, "status %q: got %+v", status, es)
		assert.Equal(t, len(want), es.Total, "status %q", status)
	}
	var es ui.EntriesResponse
	raw := b.json(http.StatusBadRequest, "GET", "/ui/api/scopes/"+s.ws+"/entries?status=deleted", nil, nil)
	assert.Contains(t, string(raw), "active, conflict, superseded, forgotten", "got %s", raw)
	b.json(http.StatusNotFound, "GET", "/ui/api/scopes/ws-00000000000000000000/entries", nil, &es)

	var h ui.EntryResponse
	b.json(http.StatusOK, "GET", "/ui/api/entries/"+added.ID, nil, &h)
	require.Len(t, h.Versions, 2, "got %+v", h)
	assert.Equal(t, "add", h.Versions[0].Op)
	assert.Equal(t, "revise", h.Versions[1].Op)
	assert.Equal(t, "race detector", h.Versions[1].Reason)
	assert.Contains(t, string(h.Entry.Provenance), "eventIds", "provenance: %s", h.Entry.Provenance)
	b.json(http.StatusNotFound, "GET", "/ui/api/entries/m-0000000000000000", nil, nil)

	var sr ui.SearchResponse
	b.json(http.StatusOK, "GET", "/ui/api/search?q="+url.QueryEscape("race detector go test")+"&scope="+s.ws, nil, &sr)
	require.NotEmpty(t, sr.Items, "got %+v", sr)
	assert.Equal(t, added.ID, sr.Items[0].ID, "got %+v", sr)
	for _, it := range sr.Items {
		assert.Nil(t, it.Episode, "search returned an observed message: %+v", it)
	}
	b.json(http.StatusBadRequest, "GET", "/ui/api/search?q=+", nil, nil)

	t.Run("ErrBadInput", func(t *testing.T) {
		before := s.eng.Log().LastSeq(s.ws)
		for _, c := range []struct {
			path string
			body any
			code int
		}{
			{"/ui/api/scopes/" + s.ws + "/remember", ui.RememberRequest{Content: "  "}, http.StatusBadRequest},
			{"/ui/api/scopes/" + s.ws + "/remember", ui.RememberRequest{Content: "x", Type: "poem"}, http.StatusBadRequest},
			{"/ui/api/scopes/" + s.ws + "/remember", map[string]string{"content": "x", "color": "red"}, http.StatusBadRequest},
			{"/ui/api/scopes/" + s.ws + "/remember", []byte(`{"content":"x"}{"content":"y"}`), http.StatusBadRequest},
			{"/ui/api/scopes/" + s.ws + "/remember", ui.RememberRequest{Content: "OPENAI_API_KEY=sk-FAKEa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6"}, http.StatusBadRequest},
			{"/ui/api/entries/" + s.entry.ID + "/forget", nil, http.StatusConflict},
			{"/ui/api/entries/" + s.entry.ID + "/revise", ui.ReviseRequest{Title: "x"}, http.StatusConflict},
			{"/ui/api/entries/" + added.ID + "/revise", ui.ReviseRequest{Content: revised.Content}, http.StatusBadRequest},
			{"/ui/api/entries/m-0000000000000000/forget", nil, http.StatusNotFound},
		} {
			resp, raw := b.do("POST", c.path, c.body, nil)
			assert.Equal(t, c.code, resp.StatusCode, "POST %s %+v: got %s", c.path, c.body, raw)
			var e ui.APIError
			assert.NoError(t, json.Unmarshal(raw, &e), "POST %s: %s", c.path, raw)
			assert.NotEmpty(t, e.Error.Message, "POST %s: %s", c.path, raw)
		}
		assert.Equal(t, before, s.eng.Log().LastSeq(s.ws), "a refused change was written")
	})
	t.Run("Replay", func(t *testing.T) { s.verifyReplay(ctx) })
}

// verifyReplay checks that replaying the log reproduces every file and
// the index: the page's changes went through the event path.
func (s *site) verifyReplay(ctx context.Context) {
	s.t.Helper()
	require.NoError(s.t, s.eng.WriteFiles(ctx))
	rep, err := replay.Verify(ctx, s.eng.Log(), s.eng.Root(), s.eng.Store(), replay.VerifyOptions{})
	require.NoError(s.t, err)
	require.Empty(s.t, rep.Differences, "replay --verify after the page's changes: %+v", rep.Differences)
	require.NotZero(s.t, rep.Files, "replay --verify compared no file")
}

// TestPurgeNeedsTypedKey: purge without the scope's key typed, or with
// another, is refused and the scope stays.
func TestPurgeNeedsTypedKey(t *testing.T) {
	s := newSite(t, nil)
	b := s.login()
	for _, confirm := range []string{"", "global", s.ws + " ", strings.ToUpper(s.ws)} {
		resp, raw := b.do("POST", "/ui/api/scopes/"+s.ws+"/purge", ui.PurgeRequest{Confirm: confirm}, nil)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "confirm %q: got %s", confirm, raw)
		assert.Contains(t, string(raw), "type its key", "confirm %q: got %s", confirm, raw)
	}
	var scopes ui.ScopesResponse
	b.json(http.StatusOK, "GET", "/ui/api/scopes", nil, &scopes)
	found := false
	for _, si := range scopes.Scopes {
		found = found || si.Key == s.ws
	}
	assert.True(t, found, "the scope is gone after refused purges: %+v", scopes)
	_, err := os.Stat(filepath.Join(s.eng.Root(), "scopes", s.ws, "memory_summary.md"))
	assert.NoError(t, err, "the scope's summary is gone after refused purges")
}

// leaky is an engine whose index holds text intake would have redacted
// (as one written before a redaction rule existed would).
type leaky struct {
	*observer.Engine
}

const leakedSecret = "sk-proj-8fK2mQ9xLr4TzW1vB7nC3dE5gH6jP0sA"

func (l leaky) leak(e observer.Entry) observer.Entry {
	e.Content += " key " + leakedSecret
	e.Title += " " + leakedSecret
	return e
}

func (l leaky) Entries(ctx context.Context, f observer.EntryFilter) ([]observer.Entry, error) {
	es, err := l.Engine.Entries(ctx, f)
	for i := range es {
		es[i] = l.leak(es[i])
	}
	return es, err
}

func (l leaky) Entry(ctx context.Context, id string) (observer.Entry, error) {
	e, err := l.Engine.Entry(ctx, id)
	return l.leak(e), err
}

func (l leaky) History(ctx context.Context, id string) ([]observer.EntryVersion, error) {
	vs, err := l.Engine.History(ctx, id)
	for i := range vs {
		vs[i].Content += " " + leakedSecret
		vs[i].Reason += " " + leakedSecret
	}
	return vs, err
}

// TestReadsRedacted: what the read routes return is redacted again, so
// no credential reaches the page even if the index holds one.
func TestReadsRedacted(t *testing.T) {
	s := newSite(t, func(e *observer.Engine) ui.Memory { return leaky{e} })
	sum := filepath.Join(s.eng.Root(), "scopes", s.ws, "memory_summary.md")
	old, err := os.ReadFile(sum)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(sum, append(old, []byte("\npassword="+leakedSecret+"\n")...), 0o644))
	b := s.login()
	for _, path := range []string{
		"/ui/api/scopes/" + s.ws,
		"/ui/api/scopes/" + s.ws + "/entries",
		"/ui/api/entries/" + s.entry.ID,
	} {
		raw := b.json(http.StatusOK, "GET", path, nil, nil)
		assert.NotContains(t, string(raw), leakedSecret, "%s leaks the secret: %s", path, raw)
		assert.Contains(t, string(raw), "[REDACTED:", "%s: want the redaction's mark in %s", path, raw)
	}
}

// TestLifecycle: archive, restore and purge from the page's routes, each
// checked against the engine.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	s := newSite(t, nil)
	b := s.login()
	inList := func(archived bool) bool {
		t.Helper()
		path := "/ui/api/scopes"
		if archived {
			path += "?archived=1"
		}
		var r ui.ScopesResponse
		b.json(http.StatusOK, "GET", path, nil, &r)
		assert.Equal(t, archived, r.Archived)
		for _, si := range r.Scopes {
			if si.Key == s.ws {
				assert.Equal(t, archived, si.Archived, "got %+v", si)
				return true
			}
		}
		return false
	}
	require.True(t, inList(false))
	require.False(t, inList(true))

	var si observer.ScopeInfo
	b.json(http.StatusOK, "POST", "/ui/api/scopes/"+s.ws+"/archive", nil, &si)
	assert.True(t, si.Archived, "got %+v", si)
	assert.False(t, inList(false), "archived scope still active")
	assert.True(t, inList(true), "archived scope not in the bin")
	eng, err := s.eng.ScopeInfo(ctx, s.ws)
	require.NoError(t, err)
	assert.True(t, eng.Archived, "the engine does not see the archive: %+v", eng)
	var sc ui.ScopeResponse
	require.NoError(t, s.eng.WriteFiles(ctx))
	b.json(http.StatusOK, "GET", "/ui/api/scopes/"+s.ws, nil, &sc)
	assert.Equal(t, "archived/"+s.ws+"/memory_summary.md", sc.SummaryPath)
	assert.Contains(t, sc.Summary, "make ship", "the summary of an archived scope: %q", sc.Summary)
	raw := b.json(http.StatusConflict, "POST", "/ui/api/scopes/"+s.ws+"/remember", ui.RememberRequest{Content: "into the bin"}, nil)
	assert.Contains(t, string(raw), "restore it", "got %s", raw)
	b.json(http.StatusConflict, "POST", "/ui/api/scopes/"+s.ws+"/archive", nil, nil)

	b.json(http.StatusOK, "POST", "/ui/api/scopes/"+s.ws+"/restore", nil, &si)
	assert.False(t, si.Archived, "got %+v", si)
	assert.True(t, inList(false), "restored scope not active")
	assert.False(t, inList(true), "restored scope still in the bin")
	b.json(http.StatusConflict, "POST", "/ui/api/scopes/"+s.ws+"/restore", nil, nil)
	s.verifyReplay(ctx)

	t.Run("ErrGlobal", func(t *testing.T) {
		b.json(http.StatusBadRequest, "POST", "/ui/api/scopes/global/archive", nil, nil)
		b.json(http.StatusBadRequest, "POST", "/ui/api/scopes/global/purge", ui.PurgeRequest{Confirm: "global"}, nil)
		_, err := s.eng.ScopeInfo(ctx, observer.GlobalStream)
		require.NoError(t, err, "the global scope is gone")
	})
	t.Run("ErrUnknownScope", func(t *testing.T) {
		b.json(http.StatusNotFound, "POST", "/ui/api/scopes/ws-00000000000000000000/archive", nil, nil)
		b.json(http.StatusNotFound, "GET", "/ui/api/scopes/ws-00000000000000000000", nil, nil)
	})

	var rep observer.PurgeReport
	b.json(http.StatusOK, "POST", "/ui/api/scopes/"+s.ws+"/purge", ui.PurgeRequest{Confirm: s.ws}, &rep)
	assert.Equal(t, s.ws, rep.Key)
	assert.NotZero(t, rep.Events, "got %+v", rep)
	assert.False(t, inList(false), "purged scope still active")
	assert.False(t, inList(true), "purged scope in the bin")
	_, err = s.eng.ScopeInfo(ctx, s.ws)
	assert.ErrorIs(t, err, observer.ErrUnknownScope, "the engine still knows the purged scope")
	_, err = os.Stat(filepath.Join(s.eng.Root(), "scopes", s.ws))
	assert.True(t, os.IsNotExist(err), "the purged scope's files: %v", err)
	b.json(http.StatusNotFound, "GET", "/ui/api/scopes/"+s.ws+"/entries", nil, nil)
	s.verifyReplay(ctx)
}

// FuzzMutationBody: whatever body a logged-in page posts, a change route
// answers with a clear status (never a 5xx) and writes nothing unless it
// says 200.
func FuzzMutationBody(f *testing.F) {
	for _, seed := range []string{
		`{"content":"Use pnpm"}`, `{"content":""}`, `{"content":1}`, `{"content":"x","importance":9}`,
		`{"title":"t","content":"c","reason":"r"}`, `{"tags":["a",""],"type":"rule"}`, `[]`, `null`, `{`, ``,
		`{"content":"x"}{"content":"y"}`, `{"confirm":"global"}`, "\x00\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		s := newSite(t, nil)
		b := s.login()
		for _, path := range []string{
			"/ui/api/scopes/" + s.ws + "/remember",
			"/ui/api/entries/" + s.entry.ID + "/revise",
			"/ui/api/entries/" + s.entry.ID + "/forget",
			"/ui/api/scopes/" + s.ws + "/purge",
		} {
			before := s.eng.Log().LastSeq(s.ws)
			req, err := http.NewRequest("POST", s.srv.URL+path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(ui.CSRFHeader, b.csrf)
			req.Header.Set("Origin", s.srv.URL)
			resp, err := b.c.Do(req)
			require.NoError(t, err)
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Less(t, resp.StatusCode, 500, "POST %s %q: %d %s", path, body, resp.StatusCode, raw)
			if resp.StatusCode != http.StatusOK {
				require.Equal(t, before, s.eng.Log().LastSeq(s.ws), "POST %s %q: refused (%d) but written", path, body, resp.StatusCode)
				var e ui.APIError
				require.NoError(t, json.Unmarshal(raw, &e), "POST %s %q: %s", path, body, raw)
				require.NotEmpty(t, e.Error.Message, "POST %s %q: %s", path, body, raw)
			}
		}
	})
}
