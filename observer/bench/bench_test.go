package bench

import (
	"context"
	"dshmem/observer"
	"testing"
)

// TestBench runs both benchmark phases small: every synthetic event is
// accepted, counted and lands on disk. (The numbers themselves are for
// `dshmem bench`; no timing is asserted.)
func TestBench(t *testing.T) {
	ctx := context.Background()
	o := BenchOptions{Events: 300, Size: 200, Producers: 3, Batch: 50, Workspaces: 3}
	t.Run("Log", func(t *testing.T) {
		r, err := BenchLog(ctx, t.TempDir(), o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Phase != "log" || r.Events != 300 || r.LogBytes <= 0 || r.P50 <= 0 || r.P99 < r.P50 {
			t.Fatalf("got %+v, want 300 events logged with latencies", r)
		}
	})
	t.Run("Ingest", func(t *testing.T) {
		root := t.TempDir()
		r, err := BenchIngest(ctx, root, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Phase != "log+index" || r.Events != 300 || r.LogBytes <= 0 || r.IndexBytes <= 0 {
			t.Fatalf("got %+v, want 300 events logged and indexed", r)
		}
		eng, err := observer.Open(ctx, root, observer.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		var n int
		if err := eng.Store().DB().Get(&n, `SELECT count(*) FROM events`); err != nil || n != 300 {
			t.Fatalf("index holds %d events (%v), want 300", n, err)
		}
	})
}

// TestSynthDeterministic: the same seed makes the same lines, and every
// line is a valid envelope, so benchmarks and the crash test compare
// like with like.
func TestSynthDeterministic(t *testing.T) {
	a, b := NewSynth(3), NewSynth(3)
	for i := range 50 {
		la, lb := a.Line(i, 300, 4), b.Line(i, 300, 4)
		if string(la) != string(lb) {
			t.Fatalf("line %d differs between two Synths of one seed:\n%s\n%s", i, la, lb)
		}
		if _, lerr := observer.Validate(la, i+1); lerr != nil {
			t.Fatalf("line %d: %v", i, lerr)
		}
	}
}
