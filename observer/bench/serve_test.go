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

// TestBenchServePaced: with a pace each session waits it after each
// step, so in 0.5 s with a 200 ms pace a session takes at most 3 steps
// (with no pause it takes as many as the server answers); the figures
// say the pace they ran with. Only a count is asserted, no timing.
func TestBenchServePaced(t *testing.T) {
	r, err := BenchServe(context.Background(), t.TempDir(), ServeBenchOptions{Sessions: 2, Duration: 500 * time.Millisecond,
		Pace: 200 * time.Millisecond, Sample: 100 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, 200.0, r.PaceMs)
	assert.Zero(t, r.Lost)
	assert.Zero(t, r.Errors(), "request errors: %+v", r.Routes)
	steps := r.Routes[0].Requests
	assert.Positive(t, steps, "no step ran")
	assert.LessOrEqual(t, steps, 2*3, "2 sessions paced at 200 ms took %d steps in 0.5 s", steps)
	assert.Equal(t, 4*steps+r.Sessions, r.Events, "events pushed")
	require.NotEmpty(t, r.Samples)
	assert.Positive(t, r.Samples[0].GoMiB, "the Go runtime's memory was not sampled")
	assert.Positive(t, r.Samples[0].HeapMiB)
}

// TestPaceAndStagger: paced sessions start spread over one pace; a
// pause that would end after the deadline, or one whose context is
// done, returns false without waiting it out; no pace never waits.
func TestPaceAndStagger(t *testing.T) {
	assert.Equal(t, time.Duration(0), stagger(0, 4, time.Second))
	assert.Equal(t, 250*time.Millisecond, stagger(1, 4, time.Second))
	assert.Equal(t, 750*time.Millisecond, stagger(3, 4, time.Second))
	assert.Equal(t, time.Duration(0), stagger(3, 4, 0), "no pace, no stagger")
	ctx := context.Background()
	assert.True(t, pause(ctx, 0, time.Now().Add(-time.Second)), "no pace never stops a session")
	assert.False(t, pause(ctx, time.Hour, time.Now().Add(time.Minute)), "a pause past the deadline must stop the session")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.False(t, pause(cancelled, time.Hour, time.Now().Add(2*time.Hour)), "a cancelled run must stop the session")
	assert.True(t, pause(ctx, time.Millisecond, time.Now().Add(time.Minute)))
}
