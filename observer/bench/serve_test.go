package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchServe drives two sessions for half a second: every request
// succeeds, each step pushes four events (five in a session's first),
// and every pushed event is in the log. No timing is asserted.
func TestBenchServe(t *testing.T) {
	r, err := BenchServe(context.Background(), t.TempDir(), ServeBenchOptions{Sessions: 2, Duration: 500 * time.Millisecond, Slow: 3, Sample: 100 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, r.Routes, 4, "got %+v", r)
	assert.Equal(t, "healthz", r.Routes[3].Route)
	assert.Positive(t, r.Routes[3].Requests, "the health prober never ran")
	assert.Equal(t, 3, r.Slow)
	require.GreaterOrEqual(t, len(r.Samples), 2, "resource samples: %+v", r.Samples)
	assert.Positive(t, r.Samples[0].Goroutines)
	assert.Equal(t, 2, r.Sessions)
	assert.Zero(t, r.Lost, "lost events")
	assert.Zero(t, r.Errors(), "request errors: %+v", r.Routes)
	steps := r.Routes[0].Requests
	assert.Positive(t, steps, "no step ran")
	for i, route := range []string{"events", "recall", "packet"} {
		assert.Equal(t, route, r.Routes[i].Route)
		assert.Equal(t, steps, r.Routes[i].Requests, "route %s: one request a step", route)
		assert.LessOrEqual(t, r.Routes[i].P50ms, r.Routes[i].P99ms, "route %s", route)
	}
	assert.Equal(t, 4*steps+r.Sessions, r.Events, "events pushed")
	assert.Positive(t, r.IntakeCalls)
}
