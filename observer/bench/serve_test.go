package bench

import (
	"context"
	"os"
	"path/filepath"
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
	assert.Zero(t, r.Duplicated, "events in the log twice")
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
	assert.Positive(t, r.Samples[0].LiveMiB, "the live heap was not sampled")
	assert.LessOrEqual(t, r.Samples[0].LiveMiB, r.Samples[0].HeapMiB, "live after a GC cannot exceed the heap in use before it")
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

// TestLogCheck: the ledgers' check finds an acknowledged event missing
// from the log, one logged twice and one logged in another session's
// stream, and ignores the events of a step that was not acknowledged
// and ids the bench did not push; it counts every pushed event.
func TestLogCheck(t *testing.T) {
	ledgers := []pushLedger{{Stream: "a", Steps: 3, Failed: []int{1}}, {Stream: "b", Steps: 2}, {Stream: "a"}}
	c := newLogCheck(ledgers)
	for n := range 3 {
		for k := range stepEvents(n) {
			if n == 2 && k == 3 || n == 1 && k > 0 {
				continue // lost; and step 1 was not acknowledged, so its events need not be logged
			}
			c.see("a", benchEventID(0, n, k))
		}
	}
	c.see("a", benchEventID(0, 0, 2)) // twice
	for n := range 2 {
		for k := range stepEvents(n) {
			stream := "b"
			if n == 1 && k == 0 {
				stream = "a" // in the wrong stream: not found in its own
			}
			c.see(stream, benchEventID(1, n, k))
		}
	}
	for _, id := range []string{"bench-0:9:0", "bench-0:0:5", "bench-7:0:0", "bench-0:1", "bench-01:0:0", "mem-1", benchEventID(2, 0, 0)} {
		c.see("a", id)
	}
	pushed, lost, dup := c.result()
	assert.Equal(t, 5+4+4+5+4, pushed, "pushed")
	assert.Equal(t, 2, lost, "lost: bench-0:2:3 and bench-1:1:0")
	assert.Equal(t, 1, dup, "in the log twice: bench-0:0:2")
	s, n, k, ok := parseBenchEventID(benchEventID(12, 345, 3))
	assert.True(t, ok)
	assert.Equal(t, [3]int{12, 345, 3}, [3]int{s, n, k})
}

// TestBenchServeMemProfile: --memprofile's two heap profiles are
// written (one at the first sample under load, one at the end), and a
// path that cannot be created fails before the run.
func TestBenchServeMemProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "heap")
	_, err := BenchServe(context.Background(), t.TempDir(), ServeBenchOptions{Sessions: 2, Duration: 500 * time.Millisecond, Sample: 100 * time.Millisecond, MemProfile: prof})
	require.NoError(t, err)
	for _, p := range []string{prof + ".first", prof} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Positive(t, st.Size(), "%s is empty", p)
	}
	root := t.TempDir()
	_, err = BenchServe(context.Background(), root, ServeBenchOptions{Duration: time.Hour, MemProfile: filepath.Join(t.TempDir(), "missing", "heap")})
	require.ErrorContains(t, err, "create heap profile")
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	assert.Empty(t, ents, "a bad profile path must fail before the server opens its root")
}
