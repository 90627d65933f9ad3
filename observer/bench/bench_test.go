package bench

import (
	"context"
	"dshmem/observer"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBench runs both benchmark phases small: every synthetic event is
// accepted, counted and lands on disk. (The numbers themselves are for
// `dshmem bench`; no timing is asserted.)
func TestBench(t *testing.T) {
	ctx := context.Background()
	o := BenchOptions{Events: 300, Size: 200, Producers: 3, Batch: 50, Workspaces: 3}
	t.Run("Log", func(t *testing.T) {
		r, err := BenchLog(ctx, t.TempDir(), o)
		require.NoError(t, err)
		require.EqualValues(t, "log", r.Phase, "got %+v, want 300 events logged with latencies", r)
		require.EqualValues(t, 300, r.Events, "got %+v, want 300 events logged with latencies", r)
		require.False(t, r.LogBytes <= 0, "got %+v, want 300 events logged with latencies", r)
		require.False(t, r.P50 <= 0, "got %+v, want 300 events logged with latencies", r)
		require.False(t, r.P99 < r.P50, "got %+v, want 300 events logged with latencies", r)
	})
	t.Run("Ingest", func(t *testing.T) {
		root := t.TempDir()
		r, err := BenchIngest(ctx, root, o)
		require.NoError(t, err)
		require.EqualValues(t, "log+index", r.Phase, "got %+v, want 300 events logged and indexed", r)
		require.EqualValues(t, 300, r.Events, "got %+v, want 300 events logged and indexed", r)
		require.False(t, r.LogBytes <= 0, "got %+v, want 300 events logged and indexed", r)
		require.False(t, r.IndexBytes <= 0, "got %+v, want 300 events logged and indexed", r)
		eng, err := observer.Open(ctx, root, observer.Options{ReadOnly: true})
		require.NoError(t, err)
		defer eng.Close()
		st, err := eng.Store().Stats(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 300, st.Events, "events in the index")
	})
}

// TestSynthDeterministic: the same seed makes the same lines, and every
// line is a valid envelope, so benchmarks and the crash test compare
// like with like.
func TestSynthDeterministic(t *testing.T) {
	a, b := NewSynth(3), NewSynth(3)
	for i := range 50 {
		la, lb := a.Line(i, 300, 4), b.Line(i, 300, 4)
		require.Equal(t, string(lb), string(la), "line %d differs between two Synths of one seed:\n%s\n%s", i, la, lb)
		_, lerr := observer.Validate(la, i+1)
		require.Nil(t, lerr, "line %d: %v", i, lerr)
	}
}

// TestBenchBackup runs the backup benchmark small: three backups, the
// second copying nothing, the third a new snapshot and the changed
// segments; the backup verifies and restores. (No timing is asserted.)
func TestBenchBackup(t *testing.T) {
	r, err := BenchBackup(context.Background(), BackupBenchOptions{Records: 2000, CacheDir: t.TempDir(), Restore: true})
	require.NoError(t, err)
	require.True(t, r.Built)
	require.Len(t, r.Runs, 3)
	require.False(t, r.Runs[0].Unchanged)
	require.NotZero(t, r.Runs[0].Copied)
	require.True(t, r.Runs[1].Unchanged, "got %+v", r.Runs[1])
	require.Zero(t, r.Runs[1].Copied)
	require.False(t, r.Runs[2].Unchanged)
	require.NotZero(t, r.Runs[2].Copied, "got %+v", r.Runs)
	require.NotZero(t, r.Verify)
	require.NotZero(t, r.Restore)
	require.GreaterOrEqual(t, r.Events, uint64(2000))
}
