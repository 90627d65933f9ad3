package events

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// treeState records every file and directory under dir: path, mode and
// bytes, so a test can check that nothing was created, removed or
// changed.
func treeState(t testing.TB, dir string) map[string]string {
	t.Helper()
	st := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		st[p] = v
		return nil
	})
	require.NoError(t, err)
	return st
}

func sameTree(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	for p := range got {
		_, ok := want[p]
		assert.True(t, ok, "%s created %s", what, p)
	}
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			t.Errorf("%s removed %s", what, p)
		case g != w:
			t.Errorf("%s changed %s", what, p)
		}
	}
}

func openReadOnly(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l, err := OpenLogReadOnly(dir, opts)
	require.NoError(t, err, "OpenLogReadOnly(%s)", dir)
	t.Cleanup(func() { l.Close() })
	return l
}

func TestOpenLogReadOnly(t *testing.T) {
	t.Run("TornTailLeftInPlace", func(t *testing.T) {
		// Every cut inside the last batch: the torn tail is reported, not
		// repaired, and the stream reads up to its last whole batch.
		dir, all := writeBatches(t, Options{}, 3, 2, 4)
		seg := segmentPaths(t, dir, "global")[0]
		orig, _ := os.ReadFile(seg)
		bs := readBatches(t, seg)
		last := bs[len(bs)-1]
		kept := all[:len(all)-int(last.Header.Count)]
		for cut := last.Offset; cut < last.End; cut++ {
			require.NoError(t, os.WriteFile(seg, orig[:cut], 0o644))
			before := treeState(t, dir)
			l, err := OpenLogReadOnly(dir, Options{})
			require.NoError(t, err, "cut at %d: OpenLogReadOnly", cut)
			torn := l.TornTails()
			if cut == last.Offset {
				require.Len(t, torn, 0, "cut at a batch boundary: got torn tails %v, want none", torn)
			} else if len(torn) != 1 || torn[0].Segment != seg || torn[0].Offset != last.Offset || torn[0].Bytes != cut-last.Offset {
				t.Fatalf("cut at %d: got torn tails %+v, want one in %s at offset %d of %d bytes", cut, torn, seg, last.Offset, cut-last.Offset)
			}
			reps := l.Repairs()
			require.Len(t, reps, 0, "cut at %d: a read-only open repaired %v", cut, reps)
			got := l.LastSeq("global")
			require.Equal(t, uint64(len(kept)), got, "cut at %d: LastSeq %d, want %d", cut, got, len(kept))
			checkEvents(t, scanAll(t, l, "global", 1), kept)
			if _, err := l.Append(context.Background(), "global", testEvents(900, 1)); !errors.Is(err, ErrReadOnly) {
				t.Fatalf("cut at %d: Append: got %v, want ErrReadOnly", cut, err)
			}
			if problems, _, err := l.Verify(context.Background()); err != nil || len(problems) != 0 {
				t.Fatalf("cut at %d: Log.Verify of the read-only snapshot: %v, %v", cut, problems, err)
			}
			require.NoError(t, l.Close())
			sameTree(t, "a read-only open", treeState(t, dir), before)
		}
		// The writer's open still finds the torn tail and cuts it off.
		l := openLog(t, dir, Options{})
		reps := l.Repairs()
		require.Len(t, reps, 1, "OpenLog after the read-only opens: got repairs %+v, want one at %d", reps, last.Offset)
		require.Equal(t, last.Offset, reps[0].Offset, "OpenLog after the read-only opens: got repairs %+v, want one at %d", reps, last.Offset)
	})

	t.Run("TornNewSegment", func(t *testing.T) {
		// A new segment torn anywhere, even inside its stream header:
		// the stream ends with the sealed segment before it.
		dir, all := writeBatches(t, Options{SegmentSize: 1}, 3, 2)
		segs := segmentPaths(t, dir, "global")
		seg := segs[1]
		orig, _ := os.ReadFile(seg)
		orig = orig[:len(orig)-recordFrameSize] // without its seal: the last segment is the active one
		first := readBatches(t, seg)[0]
		for cut := 0; cut < len(orig); cut++ {
			os.WriteFile(seg, orig[:cut], 0o644)
			before := treeState(t, dir)
			l, err := OpenLogReadOnly(dir, Options{})
			require.NoError(t, err, "cut at %d: OpenLogReadOnly", cut)
			torn := l.TornTails()
			wantOff := int64(0)
			if cut >= int(first.Offset) {
				wantOff = first.Offset
			}
			if cut == int(first.Offset) {
				require.Len(t, torn, 0, "cut after the stream header: got torn tails %+v, want none", torn)
			} else if len(torn) != 1 || torn[0].Offset != wantOff || torn[0].Bytes != int64(cut)-wantOff {
				t.Fatalf("cut at %d: got torn tails %+v, want one at offset %d", cut, torn, wantOff)
			}
			checkEvents(t, scanAll(t, l, "global", 1), all[:3])
			l.Close()
			sameTree(t, "a read-only open", treeState(t, dir), before)
		}
	})

	t.Run("CreatesNothing", func(t *testing.T) {
		parent := t.TempDir()
		missing := filepath.Join(parent, "log")
		l := openReadOnly(t, missing, Options{})
		s := l.Streams()
		require.Len(t, s, 0, "a missing directory: got streams %v, want none", s)
		_, err := os.Stat(missing)
		require.ErrorIs(t, err, fs.ErrNotExist, "a read-only open created %s (%v)", missing, err)

		dir, all := writeBatches(t, Options{SegmentSize: 600}, 3, 3, 3, 3, 3)
		n := len(segmentPaths(t, dir, "global"))
		require.False(t, n < 2, "got %d segments, want a sealed one and more", n)
		before := treeState(t, dir)
		l = openReadOnly(t, dir, Options{Trusted: map[string]uint64{"global": 6}})
		checkEvents(t, scanAll(t, l, "global", 1), all)
		if _, err := l.Append(context.Background(), "global", testEvents(900, 1)); !errors.Is(err, ErrReadOnly) {
			t.Fatalf("Append: got %v, want ErrReadOnly", err)
		}
		if _, err := l.Append(context.Background(), "ws-new", testEvents(900, 1)); !errors.Is(err, ErrReadOnly) {
			t.Fatalf("Append to a new stream: got %v, want ErrReadOnly", err)
		}
		l.Close()
		sameTree(t, "a read-only open, scan and append", treeState(t, dir), before)
	})

	t.Run("CorruptionQuarantined", func(t *testing.T) {
		dir, _ := writeBatches(t, Options{}, 3, 3, 3, 3)
		seg := segmentPaths(t, dir, "global")[0]
		bs := readBatches(t, seg)
		orig, _ := os.ReadFile(seg)
		damaged := bytes.Clone(orig)
		damaged[bs[1].Offset+recordFrameSize+int64(bs[1].Header.Length)/2] ^= 0x40
		os.WriteFile(seg, damaged, 0o644)
		before := treeState(t, dir)
		l, err := OpenLogReadOnly(dir, Options{})
		require.NoError(t, err, "OpenLogReadOnly with a damaged stream")
		d, ok := l.QuarantinedStream("global")
		require.True(t, ok, "the damaged stream is not quarantined")
		require.Equal(t, seg, d.Segment, "got %+v, want damage at %s:%d", d, seg, bs[1].Offset)
		require.Equal(t, bs[1].Offset, d.Offset, "got %+v, want damage at %s:%d", d, seg, bs[1].Offset)
		require.EqualValues(t, 3, d.Serves, "got %+v, want the 3 events before the damage served", d)
		require.Len(t, scanAll(t, l, "global", 1), 3)
		l.Close()
		sameTree(t, "a read-only open of a damaged stream (no marker written)", treeState(t, dir), before)
	})

	t.Run("TrustedByHeaders", func(t *testing.T) {
		// Batches at or below Trusted are taken by their headers: damage
		// in one of their frames does not stop the open, and a scan
		// serves every event before it, then reports it.
		dir, _ := writeBatches(t, Options{}, 3, 3, 3, 3, 3)
		seg := segmentPaths(t, dir, "global")[0]
		bs := readBatches(t, seg)
		orig, _ := os.ReadFile(seg)
		damaged := bytes.Clone(orig)
		damaged[bs[2].Offset+recordFrameSize+int64(bs[2].Header.Length)/2] ^= 0x40
		os.WriteFile(seg, damaged, 0o644)
		if l, err := OpenLogReadOnly(dir, Options{Trusted: map[string]uint64{"global": 6}}); err != nil {
			t.Fatalf("damage past Trusted: %v", err)
		} else if _, ok := l.QuarantinedStream("global"); !ok {
			t.Fatal("damage past Trusted: the stream is not quarantined")
		}
		l := openReadOnly(t, dir, Options{Trusted: map[string]uint64{"global": 12}})
		got := l.LastSeq("global")
		require.EqualValues(t, 15, got, "LastSeq %d, want 15", got)
		var last uint64
		err := l.Scan("global", 1, func(e Envelope) error { last = e.Seq; return nil })
		var ce *CorruptError
		require.True(t, errors.As(err, &ce), "Scan: got %v after seq %d, want a *CorruptError at offset %d after seq %d", err, last, bs[2].Offset, bs[2].Header.FirstSeq-1)
		require.Equal(t, bs[2].Offset, ce.Offset, "Scan: got %v after seq %d, want a *CorruptError at offset %d after seq %d", err, last, bs[2].Offset, bs[2].Header.FirstSeq-1)
		require.Equal(t, bs[2].Header.FirstSeq-1, last, "Scan: got %v after seq %d, want a *CorruptError at offset %d after seq %d", err, last, bs[2].Offset, bs[2].Header.FirstSeq-1)
	})
}

// TestSkimMatchesWalk: the end of every stream found by its batch
// headers (Trusted) is the one the full walk finds, across sealed
// segments, small and large batches and a torn tail.
func TestSkimMatchesWalk(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSize: 8 << 10, FS: noSyncFS{}})
	rng := rand.New(rand.NewSource(1))
	n := 0
	for i := 0; i < 200; i++ {
		evs := testEvents(n, 1+i%7)
		if i%50 == 0 {
			// Frames larger than a skim window: 1,024 events of varied text.
			evs = make([]Envelope, 1500)
			for j := range evs {
				evs[j] = benchEvent(rng, n+j)
			}
		}
		mustAppend(t, l, "global", evs)
		n += len(evs)
	}
	l.Close()
	segs := segmentPaths(t, dir, "global")
	require.False(t, len(segs) < 3, "got %d segments, want several", len(segs))
	large := 0
	for _, seg := range segs {
		for _, b := range readBatches(t, seg) {
			if b.End-b.Offset > skimWindow {
				large++
			}
		}
	}
	require.NotEqualValues(t, 0, large, "no batch is larger than a skim window")
	last := segs[len(segs)-1]
	b, _ := os.ReadFile(last)
	os.WriteFile(last, b[:len(b)-3], 0o644) // a torn tail
	full := openReadOnly(t, dir, Options{})
	for _, trusted := range []uint64{1, 5, uint64(n / 2), uint64(n - 20), uint64(n), 1 << 40} {
		l := openReadOnly(t, dir, Options{Trusted: map[string]uint64{"global": trusted}})
		got, want := l.LastSeq("global"), full.LastSeq("global")
		assert.Equal(t, want, got, "Trusted %d: LastSeq %d, want %d", trusted, got, want)
		if got, want := l.TornTails(), full.TornTails(); len(got) != 1 || len(want) != 1 || got[0] != want[0] {
			t.Errorf("Trusted %d: torn tails %v, want %v", trusted, got, want)
		}
		gs, _ := l.Stats()
		ws, _ := full.Stats()
		assert.Equal(t, ws, gs, "Trusted %d: stats %+v, want %+v", trusted, gs, ws)
	}
}

// TestReadOnlyBesideWriter opens the log read-only again and again while
// a writer appends and rolls segments: every open sees a whole prefix of
// what was appended, never corruption, and changes nothing.
func TestReadOnlyBesideWriter(t *testing.T) {
	dir := t.TempDir()
	w := openLog(t, dir, Options{SegmentSize: 4 << 10, FS: noSyncFS{}})
	var (
		mu       sync.Mutex
		appended []Envelope
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		for i := 0; i < 400; i++ {
			k := 1 + i%5
			got, err := w.Append(context.Background(), "global", testEvents(n, k))
			if !assert.NoError(t, err) {
				return
			}
			n += k
			mu.Lock()
			appended = append(appended, got...)
			mu.Unlock()
		}
	}()
	opens, torn := 0, 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		mu.Lock()
		acked := len(appended)
		mu.Unlock()
		l, err := OpenLogReadOnly(dir, Options{Trusted: map[string]uint64{"global": uint64(acked)}})
		require.NoError(t, err, "open %d beside the writer", opens)
		opens++
		torn += len(l.TornTails())
		evs := scanAll(t, l, "global", 1)
		l.Close()
		require.False(t, len(evs) < acked, "open %d: got %d events, but %d were acknowledged before it", opens, len(evs), acked)
		mu.Lock()
		want := appended[:min(len(evs), len(appended))]
		mu.Unlock()
		if len(evs) > len(want) {
			// Written, not yet acknowledged to the goroutine: check the rest below.
			evs = evs[:len(want)]
		}
		checkEvents(t, evs, want)
	}
	t.Logf("%d read-only opens beside the writer, %d saw a batch being written", opens, torn)
	w.Close()
	p, err := Verify(dir)
	require.NoError(t, err, "Verify after the run: %v, %v", p, err)
	require.Len(t, p, 0, "Verify after the run: %v, %v", p, err)
}
