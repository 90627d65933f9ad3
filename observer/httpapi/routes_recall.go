package httpapi

import (
	"dshmem/events"
	"fmt"
	"net/http"
	"strings"
	"time"

	"dshmem/observer"
	"dshmem/sqlstore/recall"
)

// POST /v1/recall and POST /v1/search, and the scope a request names.

// RecallRequest is the body of POST /v1/recall: the options of
// `dshmem recall` as JSON fields.
type RecallRequest struct {
	Query     string `json:"query"`
	Cwd       string `json:"cwd,omitempty"`
	Stream    string `json:"stream,omitempty"` // instead of cwd: a stream by name
	Session   string `json:"session,omitempty"`
	Kind      string `json:"kind,omitempty"` // semantic (default), episodic, all
	Limit     int    `json:"limit,omitempty"`
	Bytes     int    `json:"bytes,omitempty"`
	TimeoutMs int    `json:"timeoutMs,omitempty"`
	// IncludeInjected also ranks episodes the host or dshmem injected
	// (kind episodic or all), flagged "injected".
	IncludeInjected bool `json:"includeInjected,omitempty"`
}

// SearchRequest is the body of POST /v1/search: the options of
// `dshmem search` as JSON fields.
type SearchRequest struct {
	Query  string `json:"query"`
	Cwd    string `json:"cwd,omitempty"`
	Stream string `json:"stream,omitempty"`
	Kind   string `json:"kind,omitempty"` // episodic (default), semantic, all
	Limit  int    `json:"limit,omitempty"`
	// IncludeInjected also ranks episodes the host or dshmem injected,
	// flagged "injected".
	IncludeInjected bool `json:"includeInjected,omitempty"`
}

// scopeOf resolves the stream a request names (cwd wins over stream)
// and checks that the index knows it. status is 0 when it is fine. A cwd
// belongs to the scope Engine.Scope resolves (a subdirectory reaches its
// project's memory).
func (s *Server) scopeOf(w http.ResponseWriter, cwd, stream string) (string, int) {
	if cwd != "" && stream != "" {
		c, _ := writeError(w, http.StatusBadRequest, CodeBadRequest, "cwd and stream both choose the scope; give one")
		return "", c
	}
	if cwd != "" {
		if !observer.IsAbsCwd(cwd) {
			c, _ := writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("cwd %q is not an absolute path", cwd))
			return "", c
		}
		return s.eng.Scope(cwd).Stream, 0
	}
	if stream == "" {
		return "", 0
	}
	if !observer.ValidStream(stream) {
		c, _ := writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("stream %q is not a stream name: use \"global\" or \"ws-\" followed by 20 hex digits", stream))
		return "", c
	}
	if stream != observer.GlobalStream {
		cur, err := s.index.Cursors()
		if err != nil {
			c, _ := writeError(w, http.StatusServiceUnavailable, CodeIndex, "read the index: "+err.Error())
			return "", c
		}
		if _, ok := cur[stream]; !ok {
			c, _ := writeError(w, http.StatusNotFound, CodeUnknownScope, fmt.Sprintf("no stream %s in this root (see 'dshmem stats')", stream))
			return "", c
		}
	}
	return stream, 0
}

// scopeDirs names the directories of the workspace streams among scopes
// (the scope of cwd, when given, even before it has a stream), for the
// guidance of an empty answer.
func (s *Server) scopeDirs(cwd string, scopes []string) map[string]string {
	out := map[string]string{}
	for _, sc := range scopes {
		if d := s.eng.ScopeDir(sc); d != "" {
			out[sc] = d
		}
	}
	if cwd != "" {
		sc := s.eng.Scope(cwd)
		out[sc.Stream] = sc.Dir
	}
	return out
}

func (s *Server) handleRecall(w http.ResponseWriter, r *http.Request) (int, error) {
	var req RecallRequest
	if c, ok := decodeBody(w, r, &req); !ok {
		return c, nil
	}
	req.Query = strings.TrimSpace(req.Query)
	switch {
	case req.Query == "":
		return writeError(w, http.StatusBadRequest, CodeBadRequest, "query is empty: say what to recall")
	case req.Limit < 0 || req.Limit > 100:
		return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("limit %d is out of range (1..100)", req.Limit))
	case req.Bytes < 0 || req.Bytes > 1<<20:
		return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("bytes %d is out of range (1..1048576)", req.Bytes))
	case req.TimeoutMs < 0 || req.TimeoutMs > 60_000:
		return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("timeoutMs %d is out of range (1..60000)", req.TimeoutMs))
	}
	switch req.Kind {
	case "", recall.KindSemantic, recall.KindEpisodic, recall.KindAll:
	default:
		return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("kind %q: use semantic, episodic or all", req.Kind))
	}
	cwd := req.Cwd
	if cwd == "" && req.Stream == "" && req.Session != "" {
		if c, ok, err := s.index.SessionCwd(r.Context(), req.Session); err != nil {
			return writeError(w, http.StatusServiceUnavailable, CodeIndex, "look up the session: "+err.Error())
		} else if ok {
			cwd = c
		}
	}
	stream, c := s.scopeOf(w, cwd, req.Stream)
	if c != 0 {
		return c, nil
	}
	if stream == "" {
		stream = observer.GlobalStream
	}
	scopes := []string{stream}
	if stream != observer.GlobalStream {
		scopes = append(scopes, observer.GlobalStream)
	}
	now := s.opts.Now()
	t0 := time.Now()
	res, err := s.index.Recall(r.Context(), recall.Query{Text: req.Query, Kind: req.Kind, Scopes: scopes,
		Session: req.Session, Limit: req.Limit, Bytes: req.Bytes, Now: now, Timeout: time.Duration(req.TimeoutMs) * time.Millisecond,
		IncludeInjected: req.IncludeInjected, ScopeDirs: s.scopeDirs(cwd, scopes)})
	s.metrics.Recall.Observe(time.Since(t0))
	if err != nil {
		return writeError(w, http.StatusServiceUnavailable, CodeIndex, "recall: "+err.Error())
	}
	if req.Session != "" {
		var ids []string
		for _, it := range res.Items {
			if it.ShownEntry() {
				ids = append(ids, it.ID)
			}
		}
		if len(ids) > 0 {
			s.recordShown(req.Session, cwd, "recall", ids)
		}
	}
	return writeJSON(w, http.StatusOK, struct {
		*recall.Result
		Quarantined []events.Damage `json:"quarantined,omitempty"`
	}{res, s.quarantinedIn(scopes...)})
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) (int, error) {
	var req SearchRequest
	if c, ok := decodeBody(w, r, &req); !ok {
		return c, nil
	}
	req.Query = strings.TrimSpace(req.Query)
	if req.Query == "" {
		return writeError(w, http.StatusBadRequest, CodeBadRequest, "query is empty: say what to search for")
	}
	if req.Limit < 0 || req.Limit > 1000 {
		return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("limit %d is out of range (1..1000)", req.Limit))
	}
	if req.Limit == 0 {
		req.Limit = 10
	}
	switch req.Kind {
	case "":
		req.Kind = recall.KindEpisodic
	case recall.KindSemantic, recall.KindEpisodic, recall.KindAll:
	default:
		return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("kind %q: use episodic, semantic or all", req.Kind))
	}
	stream, c := s.scopeOf(w, req.Cwd, req.Stream)
	if c != 0 {
		return c, nil
	}
	var scopes []string
	if stream != "" {
		scopes = []string{stream}
	}
	t0 := time.Now()
	res, err := s.index.Recall(r.Context(), recall.Query{Text: req.Query, Kind: req.Kind, Scopes: scopes,
		Limit: req.Limit, Bytes: -1, NoFloor: true, IncludeInjected: req.IncludeInjected, ScopeDirs: s.scopeDirs(req.Cwd, scopes)})
	s.metrics.Recall.Observe(time.Since(t0))
	if err != nil {
		return writeError(w, http.StatusServiceUnavailable, CodeIndex, "search: "+err.Error())
	}
	return writeJSON(w, http.StatusOK, struct {
		*recall.Result
		Quarantined []events.Damage `json:"quarantined,omitempty"`
	}{res, s.quarantinedIn(scopes...)})
}
