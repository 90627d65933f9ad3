package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/broker"
)

// The packet routes: GET /v1/sessions/{id}/packet and POST
// /v1/sessions/{id}/prompt.

// MaxPacketWait is the longest a GET /v1/sessions/{id}/packet?wait=MS
// holds on; MaxPacketWaiters how many may wait at once (more are
// answered at once, as without wait).
const (
	MaxPacketWait    = 30 * time.Second
	MaxPacketWaiters = 1024
)

func (s *Server) handlePacket(w http.ResponseWriter, r *http.Request) (int, error) {
	t0 := time.Now()
	waited := false
	defer func() {
		if !waited {
			s.metrics.Packet.Observe(time.Since(t0))
		}
	}()
	session := r.PathValue("id")
	if session == "" {
		return writeError(w, http.StatusBadRequest, CodeBadRequest, "no session id in the path")
	}
	q := r.URL.Query()
	var ver uint64
	var step int
	hasVer, hasStep := q.Has("contextVersion"), q.Has("step")
	if hasVer {
		v, err := strconv.ParseUint(q.Get("contextVersion"), 10, 64)
		if err != nil {
			return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("contextVersion %q is not a number", q.Get("contextVersion")))
		}
		ver = v
	}
	if hasStep {
		v, err := strconv.Atoi(q.Get("step"))
		if err != nil || v < 0 {
			return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("step %q is not a count", q.Get("step")))
		}
		step = v
	}
	var wait time.Duration
	if q.Has("wait") {
		ms, err := strconv.Atoi(q.Get("wait"))
		if err != nil || ms < 0 || time.Duration(ms)*time.Millisecond > MaxPacketWait {
			return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("wait %q: give milliseconds, 0..%d", q.Get("wait"), MaxPacketWait.Milliseconds()))
		}
		wait = time.Duration(ms) * time.Millisecond
	}
	if wait == 0 || hasVer {
		return s.writePacket(w, session, s.broker.Fetch(session, ver, hasVer, step, hasStep))
	}
	select {
	case s.waiters <- struct{}{}:
		defer func() { <-s.waiters }()
	default:
		return s.writePacket(w, session, s.broker.Fetch(session, ver, hasVer, step, hasStep))
	}
	// A long poll: answer as soon as the session has a packet to serve,
	// else with 204 when wait is over, the session ends, the client goes
	// or the server stops.
	waited = true
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		res, ch := s.broker.FetchOrWait(session, step, hasStep)
		if res.Packet != nil || ch == nil {
			return s.writePacket(w, session, res)
		}
		select {
		case <-ch:
		case <-timer.C:
			return s.writePacket(w, session, res)
		case <-r.Context().Done():
			return s.writePacket(w, session, res)
		case <-s.quit:
			return s.writePacket(w, session, res)
		}
	}
}

// writePacket answers a fetch: 200 with the packet (logged as
// memory/shown), or 204 with the reason there is none.
func (s *Server) writePacket(w http.ResponseWriter, session string, res broker.FetchResult) (int, error) {
	if res.Packet == nil {
		s.metrics.Suppress(res.Reason)
		w.Header().Set("X-Dshmem-Reason", res.Reason)
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent, nil
	}
	s.metrics.PacketsServed.Add(1)
	ids := make([]string, len(res.Packet.Entries))
	for i, e := range res.Packet.Entries {
		ids[i] = e.ID
	}
	s.recordShown(session, res.Cwd, res.Packet.Mode, ids)
	var quarantined []events.Damage
	if len(res.Packet.Entries) > 0 {
		scopes := make([]string, len(res.Packet.Entries))
		for i, e := range res.Packet.Entries {
			scopes[i] = e.Scope
		}
		quarantined = s.quarantinedIn(scopes...)
	}
	return writeJSON(w, http.StatusOK, struct {
		*broker.Packet
		Quarantined []events.Damage `json:"quarantined,omitempty"`
	}{res.Packet, quarantined})
}

// PromptRequest is the body of POST /v1/sessions/{id}/prompt: the prompt
// a host has just claimed for the session's next turn, before it is in
// the host's log.
type PromptRequest struct {
	Text string `json:"text"`
	// MessageID is the host's id of the message; with it the prompt is
	// observed once, whichever of the host's log and this call comes
	// first.
	MessageID string `json:"messageId,omitempty"`
	Cwd       string `json:"cwd,omitempty"`
	Origin    string `json:"origin,omitempty"` // top (default) or subagent
	Step      int    `json:"step,omitempty"`
}

func (s *Server) handlePrompt(w http.ResponseWriter, r *http.Request) (int, error) {
	t0 := time.Now()
	defer func() { s.metrics.Packet.Observe(time.Since(t0)) }()
	session := r.PathValue("id")
	if session == "" {
		return writeError(w, http.StatusBadRequest, CodeBadRequest, "no session id in the path")
	}
	var req PromptRequest
	if c, ok := decodeBody(w, r, &req); !ok {
		return c, nil
	}
	switch req.Origin {
	case "", payload.OriginTop, payload.OriginSubagent:
	default:
		return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("origin %q: use top or subagent", req.Origin))
	}
	if req.Step < 0 {
		return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("step %d is not a count", req.Step))
	}
	stream := ""
	if req.Cwd != "" {
		norm := observer.NormalizeCwd(req.Cwd)
		if !observer.IsAbsCwd(norm) {
			return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("cwd %q is not an absolute path", req.Cwd))
		}
		stream = s.eng.Scope(norm).Stream // a subdirectory reaches its project's memory
	}
	text := strings.TrimSpace(req.Text)
	if text == "" {
		w.Header().Set("X-Dshmem-Reason", "empty")
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent, nil
	}
	// The prompt reaches the broker before the log has it: it is
	// redacted here as intake would, so no credential is held or
	// searched for.
	text, _ = s.redactor.String(text)
	s.broker.Claim(r.Context(), session, stream, req.Cwd, req.Origin, req.MessageID, text, req.Step)
	return s.writePacket(w, session, s.broker.Fetch(session, 0, false, req.Step, true))
}
