package events

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// faultWorkload appends 10 groups of 3 events with small frames and
// segments (so it writes new segments and seals), stopping at the first
// error. It returns the acknowledged events and the error.
func faultWorkload(t *testing.T, l *Log) ([]Envelope, error) {
	t.Helper()
	var acked []Envelope
	for i := 0; i < 10; i++ {
		got, err := l.Append(context.Background(), "global", testEvents(i*3, 3))
		if err != nil {
			return acked, err
		}
		acked = append(acked, got...)
	}
	return acked, nil
}

var faultOpts = Options{SegmentSize: 1200, MaxBatch: 2}

func TestFaultInjection(t *testing.T) {
	counter := &FaultFS{}
	l := openLog(t, t.TempDir(), Options{SegmentSize: faultOpts.SegmentSize, MaxBatch: faultOpts.MaxBatch, FS: counter})
	if _, err := faultWorkload(t, l); err != nil {
		t.Fatal(err)
	}
	l.Close()
	writes, syncs := counter.Counts()
	if writes < 10 || syncs < 12 {
		t.Fatalf("workload made %d writes and %d syncs; want enough to roll segments", writes, syncs)
	}

	run := func(t *testing.T, ffs *FaultFS) {
		dir := t.TempDir()
		opts := faultOpts
		opts.FS = ffs
		l, err := OpenLog(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		acked, err := faultWorkload(t, l)
		if !errors.Is(err, ErrStreamFailed) || !errors.Is(err, ErrInjected) {
			t.Fatalf("got %v, want an error wrapping ErrStreamFailed and the injected fault", err)
		}
		if _, err := l.Append(context.Background(), "global", testEvents(99, 1)); !errors.Is(err, ErrStreamFailed) || !errors.Is(err, ErrInjected) {
			t.Fatalf("Append after the fault: got %v, want the sticky error", err)
		}
		if got := l.LastSeq("global"); got < uint64(len(acked)) {
			t.Fatalf("LastSeq after the fault: got %d, want ≥ %d acknowledged", got, len(acked))
		}
		l.Close()

		l2 := openLog(t, dir, faultOpts)
		if ffs.Partial && len(l2.Repairs()) != 1 {
			t.Fatalf("after a torn write: got repairs %+v, want one", l2.Repairs())
		}
		all := scanAll(t, l2, "global", 1)
		if len(all) < len(acked) {
			t.Fatalf("after reopen: got %d events, want the %d acknowledged", len(all), len(acked))
		}
		checkEvents(t, all[:len(acked)], acked)
		// Events past the acknowledged ones were written but not
		// acknowledged (e.g. the fsync failed); they must still be the
		// ones the workload sent, in order.
		checkEvents(t, all, stamp(testEvents(0, len(all)), "global"))
		got := mustAppend(t, l2, "global", testEvents(1000, 2))
		if got[0].Seq != uint64(len(all)+1) {
			t.Fatalf("seq after reopen: got %d, want %d", got[0].Seq, len(all)+1)
		}
		l2.Close()
		if p, err := Verify(dir); err != nil || len(p) != 0 {
			t.Fatalf("Verify after reopen: got %v, %v", p, err)
		}
	}
	for n := 1; n <= writes; n++ {
		t.Run(fmt.Sprintf("Write%d", n), func(t *testing.T) { run(t, &FaultFS{FailWrite: n}) })
		t.Run(fmt.Sprintf("TornWrite%d", n), func(t *testing.T) { run(t, &FaultFS{FailWrite: n, Partial: true}) })
	}
	for n := 1; n <= syncs; n++ {
		t.Run(fmt.Sprintf("Sync%d", n), func(t *testing.T) { run(t, &FaultFS{FailSync: n}) })
	}
}

// stamp sets what Append would set, for comparing with scanned events.
func stamp(evs []Envelope, stream string) []Envelope {
	for i := range evs {
		evs[i].V, evs[i].Stream, evs[i].Seq = 1, stream, uint64(i+1)
	}
	return evs
}
