package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// hasBody reports whether the request may carry a body to read.
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// readBodyFirst reads the whole body, at most limit bytes, within
// BodyTimeout, while holding one of MaxBodyReads places (none free: 429).
// It returns the body, or the status it answered with.
func (s *Server) readBodyFirst(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, int, bool) {
	select {
	case s.bodies <- struct{}{}:
		defer func() { <-s.bodies }()
	default:
		w.Header().Set("Retry-After", "1")
		c, _ := writeError(w, http.StatusTooManyRequests, CodeTooMany, fmt.Sprintf("more than %d request bodies are being received; retry shortly", cap(s.bodies)))
		return nil, c, false
	}
	rc := http.NewResponseController(w)
	// The deadline is lifted once the whole body is in: net/http reads
	// on in the background to notice a client that leaves, and a deadline
	// hit there would cancel the request while it runs. After a failed
	// read it stays, so the connection is not kept waiting for the rest.
	deadlined := rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout)) == nil
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if deadlined && err == nil {
		rc.SetReadDeadline(time.Time{})
	}
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return b, 0, true
	case errors.As(err, &mbe):
		c, _ := writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("request body over %d bytes: split it", mbe.Limit))
		return nil, c, false
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		c, _ := writeError(w, http.StatusRequestTimeout, CodeTimeout, fmt.Sprintf("the request body did not arrive within %s: send it at once", s.opts.BodyTimeout))
		return nil, c, false
	default:
		c, _ := writeError(w, http.StatusBadRequest, CodeBadRequest, "read request body: "+err.Error())
		return nil, c, false
	}
}
