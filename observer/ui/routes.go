package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"strings"

	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/sqlstore/recall"
)

// MaxEntries caps the entries one answer of the entries route lists;
// Total says how many there are.
const MaxEntries = 500

// SessionResponse is GET /ui/api/session: the CSRF token the page's
// script sends with every change.
type SessionResponse struct {
	CSRF    string `json:"csrf"`
	Expires string `json:"expires"`
}

func (p *Page) handleSession(w http.ResponseWriter, r *http.Request) error {
	s := p.auth.session(r)
	writeJSON(w, http.StatusOK, SessionResponse{CSRF: s.csrf, Expires: s.expires.UTC().Format("2006-01-02T15:04:05Z07:00")})
	return nil
}

func (p *Page) handleLogout(w http.ResponseWriter, r *http.Request) error {
	p.auth.logout(r)
	http.SetCookie(w, sessionCookie("", -1))
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	return nil
}

// ScopesResponse is GET /ui/api/scopes[?archived=1]: the active scopes,
// or the recycle bin.
type ScopesResponse struct {
	Archived bool                 `json:"archived"`
	Scopes   []observer.ScopeInfo `json:"scopes"`
}

func (p *Page) handleScopes(w http.ResponseWriter, r *http.Request) error {
	archived := r.URL.Query().Get("archived")
	bin := archived == "1" || archived == "true"
	ss, err := p.mem.Scopes(r.Context(), bin)
	if err != nil {
		return err
	}
	if ss == nil {
		ss = []observer.ScopeInfo{}
	}
	writeJSON(w, http.StatusOK, ScopesResponse{Archived: bin, Scopes: ss})
	return nil
}

// ScopeResponse is GET /ui/api/scopes/{key}: the scope and its rendered
// summary (memory_summary.md, or global.md for the global scope).
type ScopeResponse struct {
	Scope       observer.ScopeInfo `json:"scope"`
	SummaryPath string             `json:"summaryPath"` // relative to the root
	Summary     string             `json:"summary"`     // "" when the file is not there yet
}

// scopeKey resolves the {key} of r to a known scope's key.
func (p *Page) scopeKey(r *http.Request) (string, error) {
	key, err := p.mem.ScopeKey(r.PathValue("key"))
	if err != nil {
		return "", refusal{http.StatusNotFound, err.Error()}
	}
	return key, nil
}

// scope resolves the {key} of r to a known scope.
func (p *Page) scope(r *http.Request) (observer.ScopeInfo, error) {
	key, err := p.scopeKey(r)
	if err != nil {
		return observer.ScopeInfo{}, err
	}
	si, err := p.mem.ScopeInfo(r.Context(), key)
	if err != nil {
		return observer.ScopeInfo{}, refusal{http.StatusNotFound, fmt.Sprintf("scope %s: %v", key, err)}
	}
	return si, nil
}

func (p *Page) handleScope(w http.ResponseWriter, r *http.Request) error {
	si, err := p.scope(r)
	if err != nil {
		return err
	}
	rel := summaryPath(si)
	b, err := os.ReadFile(filepath.Join(p.mem.Root(), filepath.FromSlash(rel)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	writeJSON(w, http.StatusOK, ScopeResponse{Scope: si, SummaryPath: rel, Summary: redact(string(b))})
	return nil
}

// summaryPath is where the rendered summary of si is (ARCHITECTURE §2):
// global.md, scopes/ws-…/memory_summary.md, or archived/ws-…/… in the bin.
func summaryPath(si observer.ScopeInfo) string {
	switch {
	case si.Key == observer.GlobalStream:
		return "global.md"
	case si.Archived:
		return "archived/" + si.Key + "/memory_summary.md"
	}
	return "scopes/" + si.Key + "/memory_summary.md"
}

// EntriesResponse is GET /ui/api/scopes/{key}/entries?status=S: the
// scope's entries of status S (all of them for S "" or "all"), oldest
// first, at most MaxEntries.
type EntriesResponse struct {
	Scope   string           `json:"scope"`
	Status  string           `json:"status"`
	Total   int              `json:"total"`
	Entries []observer.Entry `json:"entries"`
}

func (p *Page) handleEntries(w http.ResponseWriter, r *http.Request) error {
	key, err := p.scopeKey(r)
	if err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	f := observer.EntryFilter{Scopes: []string{key}}
	switch {
	case status == "" || status == "all":
		status = "all"
	case payload.KnownStatus(status):
		f.Statuses = []string{status}
	default:
		return refusal{http.StatusBadRequest, fmt.Sprintf("status %q: use one of %s, or all", status, strings.Join(payload.Statuses, ", "))}
	}
	es, err := p.mem.Entries(r.Context(), f)
	if err != nil {
		return err
	}
	resp := EntriesResponse{Scope: key, Status: status, Total: len(es), Entries: []observer.Entry{}}
	if len(es) > MaxEntries {
		es = es[len(es)-MaxEntries:] // the newest
	}
	for _, e := range es {
		resp.Entries = append(resp.Entries, redactEntry(e))
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// EntryResponse is GET /ui/api/entries/{id}: the entry and every
// version of it, oldest first, each with the event that made it.
type EntryResponse struct {
	Entry    observer.Entry          `json:"entry"`
	Versions []observer.EntryVersion `json:"versions"`
}

func (p *Page) handleEntry(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	en, err := p.mem.Entry(r.Context(), id)
	if err != nil {
		return entryError(id, err)
	}
	vs, err := p.mem.History(r.Context(), id)
	if err != nil {
		return entryError(id, err)
	}
	resp := EntryResponse{Entry: redactEntry(en), Versions: []observer.EntryVersion{}}
	for _, v := range vs {
		v.Title, v.Description, v.Content, v.Reason = redact(v.Title), redact(v.Description), redact(v.Content), redact(v.Reason)
		resp.Versions = append(resp.Versions, v)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// SearchResponse is GET /ui/api/search?q=Q[&scope=KEY]: recall over the
// entries (never the observed messages) of one scope or all of them.
type SearchResponse struct {
	Query    string        `json:"query"`
	Scope    string        `json:"scope,omitempty"`
	Items    []recall.Item `json:"items"`
	Guidance string        `json:"guidance,omitempty"`
}

func (p *Page) handleSearch(w http.ResponseWriter, r *http.Request) error {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		return refusal{http.StatusBadRequest, "the search is empty: type what to look for"}
	}
	query := recall.Query{Text: q, Kind: recall.KindSemantic, Limit: 20}
	resp := SearchResponse{Query: q, Items: []recall.Item{}}
	if arg := r.URL.Query().Get("scope"); arg != "" {
		key, err := p.mem.ScopeKey(arg)
		if err != nil {
			return refusal{http.StatusNotFound, err.Error()}
		}
		query.Scopes, resp.Scope = []string{key}, key
	}
	res, err := p.mem.Recall(r.Context(), query)
	if err != nil {
		return err
	}
	for _, it := range res.Items {
		if it.Episode != nil || it.Kind == recall.KindEpisodic {
			continue // an observed message: raw text, not memory
		}
		it.Title, it.Text = redact(it.Title), redact(it.Text)
		resp.Items = append(resp.Items, it)
	}
	resp.Guidance = res.Guidance
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// RememberRequest is the body of POST /ui/api/scopes/{key}/remember.
type RememberRequest struct {
	Content    string   `json:"content"`
	Title      string   `json:"title,omitempty"`
	Type       string   `json:"type,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Importance *int     `json:"importance,omitempty"`
}

func (p *Page) handleRemember(w http.ResponseWriter, r *http.Request) error {
	si, err := p.scope(r)
	if err != nil {
		return err
	}
	var req RememberRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	switch {
	case si.Archived:
		return refusal{http.StatusConflict, fmt.Sprintf("scope %s is in the recycle bin: restore it before adding to it", si.Key)}
	case si.Key != observer.GlobalStream && si.Dir == "":
		return refusal{http.StatusConflict, fmt.Sprintf("scope %s has no known directory, so a memory cannot be placed in it", si.Key)}
	case strings.TrimSpace(req.Content) == "":
		return refusal{http.StatusBadRequest, "the memory is empty: say what to remember"}
	case req.Type != "" && !payload.KnownEntryType(req.Type):
		return refusal{http.StatusBadRequest, fmt.Sprintf("type %q: use one of %s", req.Type, strings.Join(payload.EntryTypes, ", "))}
	case req.Importance != nil && (*req.Importance < payload.MinImportance || *req.Importance > payload.MaxImportance):
		return refusal{http.StatusBadRequest, fmt.Sprintf("importance %d is out of range (0..3)", *req.Importance)}
	}
	en, err := p.mem.Remember(r.Context(), observer.RememberRequest{Cwd: si.Dir, Content: req.Content, Title: req.Title,
		Type: req.Type, Tags: req.Tags, Importance: req.Importance})
	if err != nil {
		return entryError("", err)
	}
	writeJSON(w, http.StatusOK, redactEntry(en))
	return nil
}

// ReviseRequest is the body of POST /ui/api/entries/{id}/revise: the
// fields to change (absent ones are kept).
type ReviseRequest struct {
	Title       string   `json:"title,omitempty"`
	Content     string   `json:"content,omitempty"`
	Description *string  `json:"description,omitempty"`
	Type        string   `json:"type,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Importance  *int     `json:"importance,omitempty"`
	Reason      string   `json:"reason,omitempty"`
}

func (p *Page) handleRevise(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req ReviseRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	en, err := p.mem.Revise(r.Context(), id, observer.ReviseRequest{Title: req.Title, Content: req.Content, Description: req.Description,
		Type: req.Type, Tags: req.Tags, Importance: req.Importance, Reason: req.Reason, Provenance: observer.ProvenanceUI})
	if err != nil {
		return entryError(id, err)
	}
	writeJSON(w, http.StatusOK, redactEntry(en))
	return nil
}

// ForgetRequest is the body of POST /ui/api/entries/{id}/forget.
type ForgetRequest struct {
	Reason string `json:"reason,omitempty"`
}

func (p *Page) handleForget(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req ForgetRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	en, err := p.mem.Forget(r.Context(), id, req.Reason)
	if err != nil {
		return entryError(id, err)
	}
	writeJSON(w, http.StatusOK, redactEntry(en))
	return nil
}

func (p *Page) handleArchive(w http.ResponseWriter, r *http.Request) error {
	return p.lifecycle(w, r, p.mem.ArchiveScope)
}

func (p *Page) handleRestore(w http.ResponseWriter, r *http.Request) error {
	return p.lifecycle(w, r, p.mem.RestoreScope)
}

func (p *Page) lifecycle(w http.ResponseWriter, r *http.Request, op func(ctx context.Context, key string) (observer.ScopeInfo, error)) error {
	si, err := p.scope(r)
	if err != nil {
		return err
	}
	if err := decode(r, &struct{}{}); err != nil {
		return err
	}
	got, err := op(r.Context(), si.Key)
	if err != nil {
		return scopeError(err)
	}
	writeJSON(w, http.StatusOK, got)
	return nil
}

// PurgeRequest is the body of POST /ui/api/scopes/{key}/purge: Confirm
// must be the scope's key, typed by the person.
type PurgeRequest struct {
	Confirm string `json:"confirm"`
}

func (p *Page) handlePurge(w http.ResponseWriter, r *http.Request) error {
	si, err := p.scope(r)
	if err != nil {
		return err
	}
	var req PurgeRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Confirm != si.Key {
		return refusal{http.StatusBadRequest, fmt.Sprintf("purge deletes scope %s for good: type its key exactly to confirm", si.Key)}
	}
	rep, err := p.mem.PurgeScope(r.Context(), si.Key, req.Confirm)
	if err != nil {
		return scopeError(err)
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// decode reads a JSON object body strictly; an empty body is {}.
func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return refusal{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", mbe.Limit)}
	case err != nil:
		return refusal{http.StatusBadRequest, "read the request: " + err.Error()}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return refusal{http.StatusBadRequest, "malformed JSON body: " + err.Error()}
	}
	if dec.More() {
		return refusal{http.StatusBadRequest, "malformed JSON body: more than one value"}
	}
	return nil
}

// scopeError maps the engine's refusals of a lifecycle step to answers.
func scopeError(err error) error {
	switch {
	case errors.Is(err, observer.ErrUnknownScope):
		return refusal{http.StatusNotFound, err.Error()}
	case errors.Is(err, observer.ErrGlobalScope), errors.Is(err, observer.ErrPurgeUnconfirmed):
		return refusal{http.StatusBadRequest, err.Error()}
	case errors.Is(err, observer.ErrScopeArchived), errors.Is(err, observer.ErrScopeNotArchived):
		return refusal{http.StatusConflict, err.Error()}
	}
	return err
}

// entryError maps the engine's errors about an entry to answers.
func entryError(id string, err error) error {
	var re *observer.RefusedError
	switch {
	case errors.Is(err, observer.ErrUnknownEntry):
		return refusal{http.StatusNotFound, fmt.Sprintf("no entry %s", id)}
	case errors.Is(err, observer.ErrEntryForgotten), errors.Is(err, observer.ErrEntrySuperseded):
		return refusal{http.StatusConflict, err.Error()}
	case errors.Is(err, observer.ErrNoChange), errors.As(err, &re):
		return refusal{http.StatusBadRequest, "nothing stored: " + err.Error()}
	}
	return err
}

var redactor = observer.NewRedactor()

// redact runs the intake's redaction over text read back: what reached
// the index before a rule existed is hidden from the page too.
func redact(s string) string {
	out, _ := redactor.String(s)
	return out
}

func redactEntry(e observer.Entry) observer.Entry {
	e.Title, e.Description, e.Content = redact(e.Title), redact(e.Description), redact(e.Content)
	e.Terms = redact(e.Terms)
	tags := make([]string, len(e.Tags))
	for i, t := range e.Tags {
		tags[i] = redact(t)
	}
	e.Tags = tags
	var prov map[string]any
	if json.Unmarshal(e.Provenance, &prov) == nil {
		if s, ok := prov["reason"].(string); ok {
			prov["reason"] = redact(s)
			e.Provenance, _ = json.Marshal(prov)
		}
	}
	return e
}
