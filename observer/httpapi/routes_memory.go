package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"dshmem/observer"
	"dshmem/observer/checkpoint"
)

// The write routes beside intake: POST /v1/remember, /v1/forget and
// /v1/checkpoint.

// CheckpointAPIRequest is the body of POST /v1/checkpoint.
type CheckpointAPIRequest struct {
	Cwd     string `json:"cwd,omitempty"`
	Stream  string `json:"stream,omitempty"`
	Session string `json:"session,omitempty"`
	Force   bool   `json:"force,omitempty"`
}

// CheckpointResponse is the answer of POST /v1/checkpoint.
type CheckpointResponse struct {
	Results []checkpoint.Result `json:"results"`
}

func (s *Server) handleCheckpoint(w http.ResponseWriter, r *http.Request) (int, error) {
	var req CheckpointAPIRequest
	if c, ok := decodeBody(w, r, &req); !ok {
		return c, nil
	}
	stream, c := s.scopeOf(w, req.Cwd, req.Stream)
	if c != 0 {
		return c, nil
	}
	// The distiller may take long: do not let a closed connection cut a
	// claimed range in half (the checkpoint commits or writes nothing).
	ctx := context.WithoutCancel(r.Context())
	res, err := checkpoint.Run(ctx, s.eng, checkpoint.Request{Stream: stream, Session: req.Session, Force: req.Force,
		Now: s.opts.Now(), Distiller: s.opts.Distiller})
	s.countCheckpoint(res)
	if err != nil {
		return writeError(w, http.StatusServiceUnavailable, CodeIndex, "checkpoint: "+err.Error())
	}
	var failed []string
	for _, x := range res {
		if x.Err != nil {
			failed = append(failed, fmt.Sprintf("%s seqs %d..%d: %v", x.Session, x.From, x.To, x.Err))
		}
	}
	if len(failed) > 0 {
		return writeError(w, http.StatusServiceUnavailable, CodeDistiller,
			"distiller failed; nothing was written for these ranges and they stay pending: "+strings.Join(failed, "; "))
	}
	if res == nil {
		res = []checkpoint.Result{}
	}
	return writeJSON(w, http.StatusOK, CheckpointResponse{Results: res})
}

// RememberAPIRequest is the body of POST /v1/remember: the options of
// `dshmem remember` as JSON fields.
type RememberAPIRequest struct {
	Content    string   `json:"content"`
	Cwd        string   `json:"cwd,omitempty"`
	Global     bool     `json:"global,omitempty"`
	Title      string   `json:"title,omitempty"`
	Type       string   `json:"type,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Importance *int     `json:"importance,omitempty"`
}

func (s *Server) handleRemember(w http.ResponseWriter, r *http.Request) (int, error) {
	var req RememberAPIRequest
	if c, ok := decodeBody(w, r, &req); !ok {
		return c, nil
	}
	switch {
	case strings.TrimSpace(req.Content) == "":
		return writeError(w, http.StatusBadRequest, CodeBadRequest, "content is empty: say what to remember")
	case req.Global && req.Cwd != "":
		return writeError(w, http.StatusBadRequest, CodeBadRequest, "cwd and global both choose the scope; give one")
	case !req.Global && req.Cwd == "":
		return writeError(w, http.StatusBadRequest, CodeBadRequest, "say where the memory belongs: cwd (a workspace) or global:true")
	case req.Cwd != "" && !observer.IsAbsCwd(req.Cwd):
		return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("cwd %q is not an absolute path", req.Cwd))
	case req.Importance != nil && (*req.Importance < 0 || *req.Importance > 3):
		return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("importance %d is out of range (0..3)", *req.Importance))
	}
	en, err := s.eng.Remember(r.Context(), observer.RememberRequest{Cwd: req.Cwd, Content: req.Content, Title: req.Title,
		Type: req.Type, Tags: req.Tags, Importance: req.Importance, Time: s.opts.Now(), Received: received(r)})
	var refused *observer.RefusedError
	switch {
	case errors.As(err, &refused):
		return writeError(w, http.StatusBadRequest, CodeBadRequest, "nothing stored: "+err.Error())
	case err != nil:
		return writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "remember: "+err.Error())
	}
	return writeJSON(w, http.StatusOK, en)
}

// ForgetAPIRequest is the body of POST /v1/forget.
type ForgetAPIRequest struct {
	ID     string `json:"id"`
	Reason string `json:"reason,omitempty"`
}

func (s *Server) handleForget(w http.ResponseWriter, r *http.Request) (int, error) {
	var req ForgetAPIRequest
	if c, ok := decodeBody(w, r, &req); !ok {
		return c, nil
	}
	req.ID = strings.TrimSpace(req.ID)
	if req.ID == "" {
		return writeError(w, http.StatusBadRequest, CodeBadRequest, "id is empty: name the entry (m-…) to forget")
	}
	en, err := s.eng.Forget(r.Context(), req.ID, req.Reason)
	switch {
	case errors.Is(err, observer.ErrUnknownEntry):
		return writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no entry %s", req.ID))
	case errors.Is(err, observer.ErrEntryForgotten):
		return writeError(w, http.StatusConflict, CodeConflict, err.Error())
	case err != nil:
		return writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "forget: "+err.Error())
	}
	return writeJSON(w, http.StatusOK, en)
}
