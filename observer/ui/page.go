package ui

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"dshmem/observer"
	"dshmem/sqlstore/recall"
)

// Memory is what the page asks of the engine; *observer.Engine is one.
// Every change goes through it, so it takes the engine's event path and
// replay reproduces it.
type Memory interface {
	Root() string
	Scopes(ctx context.Context, archived bool) ([]observer.ScopeInfo, error)
	ScopeInfo(ctx context.Context, key string) (observer.ScopeInfo, error)
	ScopeKey(arg string) (string, error)
	ArchiveScope(ctx context.Context, key string) (observer.ScopeInfo, error)
	RestoreScope(ctx context.Context, key string) (observer.ScopeInfo, error)
	PurgeScope(ctx context.Context, key, confirm string) (observer.PurgeReport, error)
	Entries(ctx context.Context, f observer.EntryFilter) ([]observer.Entry, error)
	Entry(ctx context.Context, id string) (observer.Entry, error)
	History(ctx context.Context, id string) ([]observer.EntryVersion, error)
	Remember(ctx context.Context, r observer.RememberRequest) (observer.Entry, error)
	Forget(ctx context.Context, id, reason string) (observer.Entry, error)
	Revise(ctx context.Context, id string, r observer.ReviseRequest) (observer.Entry, error)
	Recall(ctx context.Context, q recall.Query) (*recall.Result, error)
}

// Options configure a Page. The zero value works.
type Options struct {
	// LinkTTL is how long a login link works (0: DefaultLinkTTL).
	LinkTTL time.Duration
	// SessionTTL is how long a login lasts (0: DefaultSessionTTL).
	SessionTTL time.Duration
	// Now is the clock of links and sessions (nil: time.Now).
	Now func() time.Time
	// Logf receives the errors of the engine behind the routes (nil:
	// nothing).
	Logf func(format string, args ...any)
}

// Page is the settings page: its files, its login and its JSON routes,
// all under /ui/.
type Page struct {
	mem  Memory
	opts Options
	auth *auth
	mux  *http.ServeMux
}

//go:embed static
var static embed.FS

// ContentSecurityPolicy is sent with every answer under /ui/: the page
// runs its own script and style only, talks to its own origin only, and
// cannot be framed.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// New returns the page over m.
func New(m Memory, opts Options) *Page {
	if opts.LinkTTL <= 0 {
		opts.LinkTTL = DefaultLinkTTL
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	p := &Page{mem: m, opts: opts, auth: newAuth(opts.Now, opts.LinkTTL, opts.SessionTTL), mux: http.NewServeMux()}
	p.routes()
	return p
}

// NewLink makes a one-time login link on origin (the scheme and host
// the browser reaches the server at, "http://127.0.0.1:PORT").
func (p *Page) NewLink(origin string) (Link, error) { return p.auth.newLink(origin) }

// ServeHTTP answers everything under /ui/.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	p.mux.ServeHTTP(w, r)
}

func (p *Page) routes() {
	p.mux.HandleFunc("GET /ui/{$}", p.handleIndex)
	p.mux.HandleFunc("GET /ui/login", p.handleLogin)
	for _, f := range []struct{ name, typ string }{
		{"app.js", "text/javascript; charset=utf-8"},
		{"app.css", "text/css; charset=utf-8"},
	} {
		p.mux.HandleFunc("GET /ui/"+f.name, func(w http.ResponseWriter, r *http.Request) { p.serveFile(w, f.name, f.typ, http.StatusOK) })
	}
	read := func(pattern string, fn func(w http.ResponseWriter, r *http.Request) error) {
		p.mux.HandleFunc("GET "+pattern, func(w http.ResponseWriter, r *http.Request) { p.read(w, r, fn) })
	}
	write := func(pattern string, fn func(w http.ResponseWriter, r *http.Request) error) {
		p.mux.HandleFunc("POST "+pattern, func(w http.ResponseWriter, r *http.Request) { p.write(w, r, fn) })
	}
	read("/ui/api/session", p.handleSession)
	read("/ui/api/scopes", p.handleScopes)
	read("/ui/api/scopes/{key}", p.handleScope)
	read("/ui/api/scopes/{key}/entries", p.handleEntries)
	read("/ui/api/entries/{id}", p.handleEntry)
	read("/ui/api/search", p.handleSearch)
	write("/ui/api/logout", p.handleLogout)
	write("/ui/api/scopes/{key}/remember", p.handleRemember)
	write("/ui/api/scopes/{key}/archive", p.handleArchive)
	write("/ui/api/scopes/{key}/restore", p.handleRestore)
	write("/ui/api/scopes/{key}/purge", p.handlePurge)
	write("/ui/api/entries/{id}/revise", p.handleRevise)
	write("/ui/api/entries/{id}/forget", p.handleForget)
	p.mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, refusal{http.StatusNotFound, "no page " + r.Method + " " + r.URL.Path + ": open /ui/"})
	})
}

func (p *Page) serveFile(w http.ResponseWriter, name, typ string, code int) {
	b, err := static.ReadFile("static/" + name)
	if err != nil {
		http.Error(w, "missing file "+name, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", typ)
	w.WriteHeader(code)
	w.Write(b)
}

// handleIndex serves the page to a logged-in browser, and to anyone else
// the page that says how to log in.
func (p *Page) handleIndex(w http.ResponseWriter, r *http.Request) {
	if p.auth.session(r) == nil {
		p.serveFile(w, "login.html", "text/html; charset=utf-8", http.StatusUnauthorized)
		return
	}
	p.serveFile(w, "index.html", "text/html; charset=utf-8", http.StatusOK)
}

// handleLogin spends a login link and sends the browser to the page with
// its session cookie.
func (p *Page) handleLogin(w http.ResponseWriter, r *http.Request) {
	cookie, _, err := p.auth.login(r.URL.Query().Get("t"))
	if err != nil {
		var rf refusal
		if !errors.As(err, &rf) {
			rf = refusal{http.StatusInternalServerError, err.Error()}
		}
		p.serveMessage(w, rf)
		return
	}
	http.SetCookie(w, sessionCookie(cookie, p.opts.SessionTTL))
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// serveMessage answers a browser's navigation with a short page that
// says what went wrong; the message is escaped.
func (p *Page) serveMessage(w http.ResponseWriter, rf refusal) {
	b, _ := static.ReadFile("static/message.html")
	var esc bytes.Buffer
	xmlEscape(&esc, rf.msg)
	b = bytes.Replace(b, []byte("{{message}}"), esc.Bytes(), 1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(rf.status)
	w.Write(b)
}

func xmlEscape(w io.Writer, s string) {
	for _, c := range s {
		switch c {
		case '<':
			io.WriteString(w, "&lt;")
		case '>':
			io.WriteString(w, "&gt;")
		case '&':
			io.WriteString(w, "&amp;")
		case '"':
			io.WriteString(w, "&#34;")
		case '\'':
			io.WriteString(w, "&#39;")
		default:
			io.WriteString(w, string(c))
		}
	}
}

// read runs a read route: a live session, and no other site asking.
func (p *Page) read(w http.ResponseWriter, r *http.Request, fn func(w http.ResponseWriter, r *http.Request) error) {
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs == "cross-site" || sfs == "same-site" {
		writeError(w, errCrossSite)
		return
	}
	if p.auth.session(r) == nil {
		writeError(w, errNoSession)
		return
	}
	p.finish(w, r, fn(w, r))
}

// write runs a mutation: same origin, a live session, its CSRF token.
func (p *Page) write(w http.ResponseWriter, r *http.Request, fn func(w http.ResponseWriter, r *http.Request) error) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if err := p.auth.checkMutation(r); err != nil {
		writeError(w, err)
		return
	}
	p.finish(w, r, fn(w, r))
}

func (p *Page) finish(w http.ResponseWriter, r *http.Request, err error) {
	if err == nil {
		return
	}
	var rf refusal
	if !errors.As(err, &rf) {
		p.opts.Logf("ui %s %s: %v", r.Method, r.URL.Path, err)
		rf = refusal{http.StatusServiceUnavailable, err.Error()}
	}
	writeError(w, rf)
}

// MaxBodyBytes caps the body of a mutation.
const MaxBodyBytes = 256 << 10

// APIError is the body of every error answer of the page's routes, in
// the shape of the API v1's.
type APIError struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, err error) {
	rf, ok := err.(refusal)
	if !ok {
		rf = refusal{http.StatusInternalServerError, err.Error()}
	}
	var e APIError
	e.Error.Message = rf.msg
	writeJSON(w, rf.status, e)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		code, buf = http.StatusInternalServerError, *bytes.NewBufferString(`{"error":{"message":"encode the answer"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}
