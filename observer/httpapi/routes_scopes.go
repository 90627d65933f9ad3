package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"dshmem/observer"
)

// The scope routes (issue 14): GET /v1/scopes lists the scopes (with
// ?archived=1 the recycle bin); POST /v1/scopes/archive, /restore and
// /purge change one, through the engine's event path, as the CLI does.

// ScopesResponse is the answer of GET /v1/scopes.
type ScopesResponse struct {
	Scopes []observer.ScopeInfo `json:"scopes"`
}

// ScopeAPIRequest is the body of POST /v1/scopes/archive, /restore and
// /purge: the scope by key ("ws-…") or by its directory (absolute), and
// for a purge the key once more.
type ScopeAPIRequest struct {
	Key     string `json:"key"`
	Confirm string `json:"confirm,omitempty"`
}

func (s *Server) handleScopes(w http.ResponseWriter, r *http.Request) (int, error) {
	archived := false
	if v := r.URL.Query().Get("archived"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return writeError(w, http.StatusBadRequest, CodeBadRequest, "archived="+strconv.Quote(v)+": use archived=1 for the recycle bin, archived=0 (or nothing) for the active scopes")
		}
		archived = b
	}
	list, err := s.eng.Scopes(r.Context(), archived)
	if err != nil {
		return writeError(w, http.StatusServiceUnavailable, CodeIndex, "scopes: "+err.Error())
	}
	return writeJSON(w, http.StatusOK, ScopesResponse{Scopes: list})
}

func (s *Server) handleScopeArchive(w http.ResponseWriter, r *http.Request) (int, error) {
	return s.scopeChange(w, r, "archive")
}

func (s *Server) handleScopeRestore(w http.ResponseWriter, r *http.Request) (int, error) {
	return s.scopeChange(w, r, "restore")
}

func (s *Server) handleScopePurge(w http.ResponseWriter, r *http.Request) (int, error) {
	return s.scopeChange(w, r, "purge")
}

func (s *Server) scopeChange(w http.ResponseWriter, r *http.Request, verb string) (int, error) {
	var req ScopeAPIRequest
	if c, ok := decodeBody(w, r, &req); !ok {
		return c, nil
	}
	key, err := s.eng.ScopeKey(req.Key)
	if err != nil {
		return scopeError(w, err)
	}
	ctx := r.Context()
	var out any
	switch verb {
	case "archive":
		out, err = s.eng.ArchiveScope(ctx, key)
	case "restore":
		out, err = s.eng.RestoreScope(ctx, key)
	default:
		out, err = s.eng.PurgeScope(ctx, key, req.Confirm)
	}
	if err != nil {
		return scopeError(w, err)
	}
	return writeJSON(w, http.StatusOK, out)
}

// scopeError answers an error of the scope lifecycle.
func scopeError(w http.ResponseWriter, err error) (int, error) {
	switch {
	case errors.Is(err, observer.ErrUnknownScope):
		return writeError(w, http.StatusNotFound, CodeUnknownScope, err.Error())
	case errors.Is(err, observer.ErrGlobalScope), errors.Is(err, observer.ErrPurgeUnconfirmed):
		return writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
	case errors.Is(err, observer.ErrScopeArchived), errors.Is(err, observer.ErrScopeNotArchived):
		return writeError(w, http.StatusConflict, CodeConflict, err.Error())
	}
	return writeError(w, http.StatusServiceUnavailable, CodeUnavailable, err.Error())
}
