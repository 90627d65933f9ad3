package httpapi

import (
	"strings"
	"testing"
	"time"

	"dshmem/observer"

	"github.com/stretchr/testify/require"
)

// TestScheduledCheckpoint: with nobody asking, serve's schedule distils
// a session whose idle trigger fired (5 minutes without activity, in the
// log's own clock: a later event of another session): the entry appears
// with no checkpoint request.
func TestScheduledCheckpoint(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{AutoCheckpoint: 20 * time.Millisecond})
	const cwd = "/work/scheduled"
	ts.must(200, "POST", "/v1/events", []any{
		event("sc:0", "session/start", "sc", cwd, map[string]any{"origin": "top"}),
		event("sc:1", "user/message", "sc", cwd, map[string]any{"text": "remember that the nightly export runs from the cron host ferret"}),
	}, nil)
	entries := func() []observer.Entry {
		es, err := ts.eng.Entries(t.Context(), observer.EntryFilter{Scopes: []string{observer.StreamForCwd(cwd)}})
		require.NoError(t, err)
		return es
	}
	// Before the idle trigger nothing is distilled, however often the
	// schedule looks.
	time.Sleep(100 * time.Millisecond) // several schedule ticks; not a timing assertion
	require.Empty(t, entries(), "distilled before any trigger fired")
	later := event("other:0", "session/start", "other", "/work/elsewhere", map[string]any{"origin": "top"})
	later["time"] = "2026-08-18T10:06:00Z"
	ts.must(200, "POST", "/v1/events", []any{later}, nil)
	require.Eventually(t, func() bool {
		for _, e := range entries() {
			if strings.Contains(e.Content, "ferret") {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the schedule never distilled the idle session")
}
