package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"
)

// The page's own login: `dshmem ui` asks the server (bearer-authenticated
// POST /v1/ui/link) for a one-time link; following it trades the link's
// token for a session cookie. Links and sessions live in the server's
// memory only: a restart logs everyone out.

// Names on the wire. Part of the page's protocol with its script; do not
// change one without the other.
const (
	// CookieName is the session cookie (HttpOnly, SameSite=Strict, Path=/ui/).
	CookieName = "dshmem_ui"
	// CSRFHeader carries the session's CSRF token on every mutation; a
	// form post may send it as the field CSRFField instead.
	CSRFHeader = "X-CSRF-Token"
	CSRFField  = "csrf"
	// LoginPath is where a login link points; its token is the query
	// parameter "t".
	LoginPath = "/ui/login"
)

// Defaults of Options.
const (
	DefaultLinkTTL    = 5 * time.Minute
	DefaultSessionTTL = 12 * time.Hour
	// maxLinks and maxSessions bound what a flood of links or logins can
	// hold in memory; the oldest goes first.
	maxLinks    = 32
	maxSessions = 64
)

// Link is a one-time login link: the answer of POST /v1/ui/link and what
// `dshmem ui` prints.
type Link struct {
	URL     string `json:"url"`
	Expires string `json:"expires"` // RFC 3339
}

// session is one logged-in browser.
type session struct {
	csrf    string
	expires time.Time
}

// auth holds the outstanding login links and the sessions, each keyed by
// the sha256 of its secret, so a map look-up never compares secrets
// byte by byte.
type auth struct {
	mu       sync.Mutex
	now      func() time.Time
	linkTTL  time.Duration
	ttl      time.Duration
	links    map[string]time.Time // sha256(token) → expiry
	sessions map[string]*session  // sha256(cookie) → session
}

func newAuth(now func() time.Time, linkTTL, ttl time.Duration) *auth {
	return &auth{now: now, linkTTL: linkTTL, ttl: ttl, links: map[string]time.Time{}, sessions: map[string]*session{}}
}

func secret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a login secret: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// newLink makes a login link on origin ("http://127.0.0.1:PORT").
func (a *auth) newLink(origin string) (Link, error) {
	tok, err := secret()
	if err != nil {
		return Link{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	exp := now.Add(a.linkTTL)
	for k, e := range a.links {
		if !now.Before(e) {
			delete(a.links, k)
		}
	}
	for len(a.links) >= maxLinks {
		delete(a.links, oldest(a.links, func(e time.Time) time.Time { return e }))
	}
	a.links[digest(tok)] = exp
	return Link{URL: origin + LoginPath + "?t=" + url.QueryEscape(tok), Expires: exp.UTC().Format(time.RFC3339)}, nil
}

// login spends a link's token: it works once, before it expires, and
// returns the new session's cookie value.
func (a *auth) login(tok string) (cookie string, s *session, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := digest(tok)
	exp, ok := a.links[k]
	delete(a.links, k)
	now := a.now()
	switch {
	case tok == "" || !ok:
		return "", nil, errLinkUsed
	case !now.Before(exp):
		return "", nil, errLinkExpired
	}
	if cookie, err = secret(); err != nil {
		return "", nil, err
	}
	csrf, err := secret()
	if err != nil {
		return "", nil, err
	}
	for k, s := range a.sessions {
		if !now.Before(s.expires) {
			delete(a.sessions, k)
		}
	}
	for len(a.sessions) >= maxSessions {
		delete(a.sessions, oldest(a.sessions, func(s *session) time.Time { return s.expires }))
	}
	s = &session{csrf: csrf, expires: now.Add(a.ttl)}
	a.sessions[digest(cookie)] = s
	return cookie, s, nil
}

// session returns the live session of r's cookie, or nil.
func (a *auth) session(r *http.Request) *session {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := digest(c.Value)
	s := a.sessions[k]
	if s != nil && !a.now().Before(s.expires) {
		delete(a.sessions, k)
		return nil
	}
	return s
}

// logout ends the session of r's cookie.
func (a *auth) logout(r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil {
		a.mu.Lock()
		delete(a.sessions, digest(c.Value))
		a.mu.Unlock()
	}
}

func oldest[V any](m map[string]V, at func(V) time.Time) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return at(m[keys[i]]).Before(at(m[keys[j]])) })
	return keys[0]
}

// sessionCookie is the cookie that carries a session: the browser sends
// it to /ui/ only, never to script, and never with a request another
// site started.
func sessionCookie(value string, maxAge time.Duration) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: value, Path: "/ui/", MaxAge: int(maxAge / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode}
}

// Why a request was refused; the messages say what to do.
var (
	errLinkUsed    = refusal{http.StatusForbidden, "this login link was already used or is unknown: run 'dshmem ui' for a new one"}
	errLinkExpired = refusal{http.StatusForbidden, "this login link has expired (links last a few minutes): run 'dshmem ui' for a new one"}
	errNoSession   = refusal{http.StatusUnauthorized, "not logged in, or the session ended: run 'dshmem ui' in a terminal and open the link it prints"}
	errCrossSite   = refusal{http.StatusForbidden, "cross-site request refused: the page only accepts changes made from itself"}
	errNoCSRF      = refusal{http.StatusForbidden, "missing or wrong CSRF token: reload the page and try again"}
)

// refusal is an error answer of the page's routes.
type refusal struct {
	status int
	msg    string
}

func (r refusal) Error() string { return r.msg }

// sameOrigin refuses a request that a browser says another site (or
// another origin) started: Sec-Fetch-Site must be same-origin where the
// browser sends it, and Origin, where present, must be the page's own.
func sameOrigin(r *http.Request) error {
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" {
		return errCrossSite
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		return errCrossSite
	}
	return nil
}

// checkMutation is the gate of every POST: same origin, a live session,
// and that session's CSRF token, compared in constant time.
func (a *auth) checkMutation(r *http.Request) error {
	if err := sameOrigin(r); err != nil {
		return err
	}
	s := a.session(r)
	if s == nil {
		return errNoSession
	}
	tok := r.Header.Get(CSRFHeader)
	if tok == "" && r.Header.Get("Content-Type") == "application/x-www-form-urlencoded" {
		tok = r.PostFormValue(CSRFField)
	}
	if tok == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.csrf)) != 1 {
		return errNoCSRF
	}
	return nil
}
