package httpapi

import (
	"net/http"

	"dshmem/observer/ui"
)

// The settings page (observer/ui) lives under /ui/ with a login of its
// own; the one route of it behind the bearer token hands out its login
// links.

// UILinkResponse is the answer of POST /v1/ui/link: a one-time login
// link to the settings page, as `dshmem ui` prints it.
type UILinkResponse = ui.Link

func (s *Server) handleUILink(w http.ResponseWriter, r *http.Request) (int, error) {
	// The request has no fields: its body, if any, is not read.
	link, err := s.page.NewLink("http://" + r.Host)
	if err != nil {
		return writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "make a login link: "+err.Error())
	}
	return writeJSON(w, http.StatusOK, link)
}

// servePage answers under /ui/: the page keeps the server busy (no idle
// exit while someone browses), takes a concurrency slot, and is counted
// as one route in the metrics.
func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	code := http.StatusOK
	rec := &statusRecorder{ResponseWriter: w, code: &code}
	defer func() { s.metrics.Request("ui", code) }()
	s.life.touch(s.opts.Now())
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		code, _ = writeError(w, http.StatusTooManyRequests, CodeTooMany, "too many requests in flight; retry shortly")
		return
	}
	s.page.ServeHTTP(rec, r)
}

// statusRecorder notes the status code a handler answers with.
type statusRecorder struct {
	http.ResponseWriter
	code *int
}

func (r *statusRecorder) WriteHeader(code int) {
	*r.code = code
	r.ResponseWriter.WriteHeader(code)
}
