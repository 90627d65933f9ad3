package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
	require.False(t, writes < 10, "workload made %d writes and %d syncs; want enough to roll segments", writes, syncs)
	require.False(t, syncs < 12, "workload made %d writes and %d syncs; want enough to roll segments", writes, syncs)

	run := func(t *testing.T, ffs *FaultFS) {
		dir := t.TempDir()
		opts := faultOpts
		opts.FS = ffs
		l, err := OpenLog(dir, opts)
		require.NoError(t, err)
		acked, err := faultWorkload(t, l)
		require.ErrorIs(t, err, ErrStreamFailed, "got %v, want an error wrapping ErrStreamFailed and the injected fault", err)
		require.ErrorIs(t, err, ErrInjected, "got %v, want an error wrapping ErrStreamFailed and the injected fault", err)
		if _, err := l.Append(context.Background(), "global", testEvents(99, 1)); !errors.Is(err, ErrStreamFailed) || !errors.Is(err, ErrInjected) {
			t.Fatalf("Append after the fault: got %v, want the sticky error", err)
		}
		if got := l.LastSeq("global"); got < uint64(len(acked)) {
			t.Fatalf("LastSeq after the fault: got %d, want ≥ %d acknowledged", got, len(acked))
		}
		l.Close()

		l2 := openLog(t, dir, faultOpts)
		// The failed group's bytes were taken back (a torn write among
		// them), so reopening finds nothing to repair.
		require.Empty(t, l2.Repairs(), "after the fault: the failed batch's bytes were left behind")
		all := scanAll(t, l2, "global", 1)
		// An error returned to a caller means the events are not in the
		// log: exactly the acknowledged ones are.
		require.Len(t, all, len(acked), "after reopen: got %d events, want the %d acknowledged and no more", len(all), len(acked))
		checkEvents(t, all, acked)
		got := mustAppend(t, l2, "global", testEvents(1000, 2))
		require.Equal(t, uint64(len(all)+1), got[0].Seq, "seq after reopen: got %d, want %d", got[0].Seq, len(all)+1)
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

// TestGroupCommitIO backs the package doc's promises: a batch header and
// its frame go out in one write, one Append is one write and one fsync
// (plus the directory syncs of a new stream and segment), and a frame
// holds at most MaxBatch events and about 8 MiB of JSON.
func TestGroupCommitIO(t *testing.T) {
	t.Run("OneWriteOneSync", func(t *testing.T) {
		counter := &FaultFS{}
		dir := t.TempDir()
		l := openLog(t, dir, Options{MaxBatch: 3, FS: counter})
		mustAppend(t, l, "global", testEvents(0, 10))
		// New stream: sync of the log directory, the segment, the stream directory.
		w, s := counter.Counts()
		require.EqualValues(t, 1, w, "first Append: got %d writes and %d syncs, want 1 and 3", w, s)
		require.EqualValues(t, 3, s, "first Append: got %d writes and %d syncs, want 1 and 3", w, s)
		mustAppend(t, l, "global", testEvents(10, 10))
		if w, s := counter.Counts(); w != 2 || s != 4 {
			t.Fatalf("second Append: got %d writes and %d syncs in all, want 2 and 4", w, s)
		}
		l.Close()
		var counts []uint32
		for _, b := range readBatches(t, segmentPaths(t, dir, "global")[0]) {
			counts = append(counts, b.Header.Count)
		}
		got, want := fmt.Sprint(counts), "[3 3 3 1 3 3 3 1]"
		require.Equal(t, want, got, "events per frame: got %s, want %s (MaxBatch 3)", got, want)
	})

	t.Run("FrameBytes", func(t *testing.T) {
		dir := t.TempDir()
		l := openLog(t, dir, Options{})
		evs := testEvents(0, 3)
		big := strings.Repeat("x", 3<<20)
		for i := range evs {
			evs[i].Data = json.RawMessage(`{"text":"` + big + `"}`)
		}
		mustAppend(t, l, "global", evs)
		l.Close()
		var counts []uint32
		for _, b := range readBatches(t, segmentPaths(t, dir, "global")[0]) {
			counts = append(counts, b.Header.Count)
		}
		got, want := fmt.Sprint(counts), "[2 1]"
		require.Equal(t, want, got, "events per frame of three 3 MiB events: got %s, want %s (8 MiB per frame)", got, want)
	})
}
