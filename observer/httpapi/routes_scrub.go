package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"dshmem/observer/scrub"
)

// ScrubAPIRequest is the body of POST /v1/scrub.
type ScrubAPIRequest struct {
	Sources bool `json:"sources,omitempty"`
	DryRun  bool `json:"dryRun,omitempty"`
}

// handleScrub runs `dshmem scrub` inside the server, the root's one
// writer (scrub.Run): the answer is its scrub.Report. The scrub goes on
// if the client goes away (it is crash-safe, but a finished one is
// better), and the write deadline is lifted: a scrub of a large root
// rebuilds its index.
func (s *Server) handleScrub(w http.ResponseWriter, r *http.Request) (int, error) {
	var req ScrubAPIRequest
	if c, ok := decodeBody(w, r, &req); !ok {
		return c, nil
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	rep, err := scrub.Run(context.WithoutCancel(r.Context()), s.eng, scrub.Options{Sources: req.Sources, DryRun: req.DryRun})
	switch {
	case errors.Is(err, scrub.ErrHandEdit):
		return writeError(w, http.StatusConflict, CodeConflict, err.Error())
	case err != nil:
		return writeError(w, http.StatusServiceUnavailable, CodeUnavailable, err.Error())
	}
	return writeJSON(w, http.StatusOK, rep)
}
