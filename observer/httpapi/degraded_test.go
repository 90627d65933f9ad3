package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/observer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeRecoversFromAWriteFault: a write that fails once (a disk full
// for a moment) makes that stream refuse writes with a message that says
// what failed and what to do, health reports the stream degraded with
// its reason, and once the retry delay has passed the same server takes
// writes again and health is clear — no restart.
func TestServeRecoversFromAWriteFault(t *testing.T) {
	ffs := &events.FaultFS{Transient: true}
	ts := startServerWith(t, t.TempDir(), observer.Options{Log: events.Options{FS: ffs, RetryAfter: 300 * time.Millisecond}}, ServerOptions{})
	const cwd = "/home/u/faulty"
	ts.must(200, "POST", "/v1/remember", map[string]any{"cwd": cwd, "content": "The first fact is stored."}, nil)
	writes, _ := ffs.Counts()
	ffs.FailWrite = writes + 1 // the next write to the log fails, once
	code, out := ts.call("POST", "/v1/remember", map[string]any{"cwd": cwd, "content": "This one meets the fault."})
	require.Equal(t, http.StatusServiceUnavailable, code, "%s", out)
	assert.Contains(t, string(out), "free disk space", "the refusal does not say what to do")
	var h Health
	ts.must(200, "GET", "/v1/healthz", nil, &h)
	require.Len(t, h.Degraded, 1, "health does not report the degraded stream: %+v", h)
	assert.Equal(t, observer.StreamForCwd(cwd), h.Degraded[0].Stream)
	assert.Contains(t, h.Degraded[0].Reason, "injected")
	// Other streams are not affected.
	ts.must(200, "POST", "/v1/remember", map[string]any{"global": true, "content": "A global fact meanwhile."}, nil)

	require.Eventually(t, func() bool {
		code, _ := ts.call("POST", "/v1/remember", map[string]any{"cwd": cwd, "content": "Stored after the fault."})
		return code == 200
	}, 20*time.Second, 20*time.Millisecond, "the stream never took writes again")
	ts.must(200, "GET", "/v1/healthz", nil, &h)
	assert.Empty(t, h.Degraded, "health still reports a degraded stream after the recovery")
	es, err := ts.eng.Entries(t.Context(), observer.EntryFilter{Scopes: []string{observer.StreamForCwd(cwd)}})
	require.NoError(t, err)
	var texts []string
	for _, e := range es {
		texts = append(texts, e.Content)
	}
	joined := strings.Join(texts, "\n")
	assert.Contains(t, joined, "The first fact is stored.")
	assert.Contains(t, joined, "Stored after the fault.")
	assert.NotContains(t, joined, "This one meets the fault.", "a refused write reached the index")
}
