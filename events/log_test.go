package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendScan(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	var want []Envelope
	for i := 0; i < 5; i++ {
		got := mustAppend(t, l, "global", testEvents(i*3, 3))
		for j, e := range got {
			wantSeq := uint64(i*3 + j + 1)
			require.Equal(t, wantSeq, e.Seq, "stamped event: got seq %d stream %q v %d, want seq %d stream global v 1", e.Seq, e.Stream, e.V, wantSeq)
			require.EqualValues(t, "global", e.Stream, "stamped event: got seq %d stream %q v %d, want seq %d stream global v 1", e.Seq, e.Stream, e.V, wantSeq)
			require.EqualValues(t, 1, e.V, "stamped event: got seq %d stream %q v %d, want seq %d stream global v 1", e.Seq, e.Stream, e.V, wantSeq)
		}
		want = append(want, got...)
	}
	mustAppend(t, l, "ws-0123456789abcdef0123", testEvents(100, 2))
	checkEvents(t, scanAll(t, l, "global", 0), want)
	checkEvents(t, scanAll(t, l, "global", 7), want[6:])
	got := l.Streams()
	require.EqualValues(t, "global,ws-0123456789abcdef0123", strings.Join(got, ","), "Streams: got %v", got)
	if got := l.LastSeq("global"); got != 15 {
		t.Fatalf("LastSeq: got %d, want 15", got)
	}
	require.NoError(t, l.Close())

	l2 := openLog(t, dir, Options{})
	checkEvents(t, scanAll(t, l2, "global", 1), want)
	st, err := l2.Stats()
	require.NoError(t, err, "Stats: got %+v, %v", st, err)
	require.EqualValues(t, 2, st.Streams, "Stats: got %+v, %v", st, err)
	require.EqualValues(t, 17, st.Events, "Stats: got %+v, %v", st, err)
	require.EqualValues(t, 2, st.Segments, "Stats: got %+v, %v", st, err)
	require.False(t, st.Bytes <= 0, "Stats: got %+v, %v", st, err)
	if _, err := l2.Append(context.Background(), "../x", testEvents(0, 1)); err == nil {
		t.Fatal("Append to stream ../x: got no error")
	}
	if _, err := l2.Append(context.Background(), "global", []Envelope{{V: 2, ID: "x"}}); err == nil {
		t.Fatal("Append of a v2 event: got no error")
	}
	if got := mustAppend(t, l2, "global", testEvents(200, 1)); got[0].Seq != 16 {
		t.Fatalf("seq after reopen: got %d, want 16", got[0].Seq)
	}
	require.Len(t, l2.Repairs(), 0, "Repairs of a clean log: got %v", l2.Repairs())
	require.NoError(t, l2.Close())
	if _, err := l2.Append(context.Background(), "global", testEvents(0, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: got %v, want ErrClosed", err)
	}
	problems, err := Verify(dir)
	require.NoError(t, err, "Verify: got %v, %v", problems, err)
	require.Len(t, problems, 0, "Verify: got %v, %v", problems, err)
}

// The writer splices the seq into a pre-marshalled tail; the line must
// still be exactly what Marshal produces.
func TestLineMatchesMarshal(t *testing.T) {
	s := (&Log{}).newStream("ws-abc")
	cases := []Envelope{
		testEvent(0), testEvent(1), testEvent(2), testEvent(3),
		{ID: "a", Type: "x", Time: "t"},
		{ID: "<&>\u2028", Type: "user/message", Time: "t", Data: json.RawMessage(`{ "a" : [1, 2] }`)},
	}
	for i, e := range cases {
		e.V, e.Stream, e.Seq = 1, "ws-abc", 0
		tail, err := marshalTail(&e, s.head)
		e.Seq = uint64(i+1) * 1000003
		require.NoError(t, err)
		got := string(s.appendLine(nil, e.Seq, tail))
		want := marshalLine(t, e) + "\n"
		assert.Equal(t, want, got, "case %d: got %s, want %s", i, got, want)
	}
}

func TestConcurrentAppend(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSize: 4 << 10, MaxBatch: 7})
	const workers, calls = 16, 60
	type acked struct{ evs []Envelope }
	results := make([][]acked, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for c := 0; c < calls; c++ {
				n := 1 + (w+c)%3
				evs := testEvents(w*10000+c*10, n)
				got, err := l.Append(context.Background(), "global", evs)
				if !assert.NoError(t, err, "Append") {
					return
				}
				for i := 1; i < len(got); i++ {
					assert.Equal(t, got[i-1].Seq+1, got[i].Seq, "events of one Append not contiguous: %d then %d", got[i-1].Seq, got[i].Seq)
				}
				results[w] = append(results[w], acked{got})
			}
		}(w)
	}
	wg.Wait()
	require.NoError(t, l.Close())
	l2 := openLog(t, dir, Options{SegmentSize: 4 << 10, MaxBatch: 7})
	all := scanAll(t, l2, "global", 1)
	byID := map[string]Envelope{}
	for i, e := range all {
		require.Equal(t, uint64(i+1), e.Seq, "seq %d at position %d: seqs not contiguous", e.Seq, i)
		_, dup := byID[e.ID]
		require.False(t, dup, "event %s stored twice", e.ID)
		byID[e.ID] = e
	}
	n := 0
	for _, rs := range results {
		for _, a := range rs {
			for _, e := range a.evs {
				n++
				got, ok := byID[e.ID]
				require.True(t, ok, "acknowledged event %s seq %d: got %+v present=%v", e.ID, e.Seq, got.Seq, ok)
				require.Equal(t, e.Seq, got.Seq, "acknowledged event %s seq %d: got %+v present=%v", e.ID, e.Seq, got.Seq, ok)
			}
		}
	}
	require.Equal(t, len(all), n, "log holds %d events, %d were acknowledged", len(all), n)
	segs := segmentPaths(t, dir, "global")
	require.False(t, len(segs) < 3, "got %d segments, want several (SegmentSize 4 KiB)", len(segs))
	problems, err := Verify(dir)
	require.NoError(t, err, "Verify: got %v, %v", problems, err)
	require.Len(t, problems, 0, "Verify: got %v, %v", problems, err)
}

func TestSegmentRoll(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentSize: 2 << 10, MaxBatch: 5}
	l := openLog(t, dir, opts)
	var want []Envelope
	for i := 0; i < 20; i++ {
		want = append(want, mustAppend(t, l, "global", testEvents(i*4, 4))...)
	}
	segs := segmentPaths(t, dir, "global")
	require.False(t, len(segs) < 3, "got %d segments, want ≥ 3", len(segs))
	sealed := map[string][]byte{}
	for _, p := range segs[:len(segs)-1] {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		sealed[p] = b
	}
	for i := 20; i < 40; i++ {
		want = append(want, mustAppend(t, l, "global", testEvents(i*4, 4))...)
	}
	for p, b := range sealed {
		got, err := os.ReadFile(p)
		require.NoError(t, err, "sealed segment %s changed after further appends (err %v)", p, err)
		require.Equal(t, b, got, "sealed segment %s changed after further appends (err %v)", p, err)
	}
	check := func(l *Log) {
		for from := uint64(0); from <= uint64(len(want))+1; from++ {
			got := scanAll(t, l, "global", from)
			skip := max(int(from), 1) - 1
			if skip > len(want) {
				skip = len(want)
			}
			checkEvents(t, got, want[skip:])
		}
	}
	check(l)
	l.Close()
	check(openLog(t, dir, opts))
	for _, p := range segmentPaths(t, dir, "global")[:len(segs)-1] {
		f, _ := os.Open(p)
		r := NewReader(f)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		f.Close()
		_, ok := r.Seal()
		require.True(t, ok, "segment %s: not sealed", p)
	}
}

// The stock zstd tool must print exactly the header line and the events.
func TestZstdCLI(t *testing.T) {
	zstd, err := exec.LookPath("zstd")
	if err != nil {
		t.Skip("zstd tool not installed (CI installs it)")
	}
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSize: 1 << 10, MaxBatch: 3})
	var all []Envelope
	for i := 0; i < 10; i++ {
		all = append(all, mustAppend(t, l, "global", testEvents(i*2, 2))...)
	}
	l.Close()
	segs := segmentPaths(t, dir, "global")
	require.False(t, len(segs) < 2, "got %d segments, want a sealed one and an active one", len(segs))
	seen := 0
	for _, p := range segs {
		out, err := exec.Command(zstd, "-dc", p).Output()
		require.NoError(t, err, "zstd -dc %s", p)
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		var h StreamHeader
		if err := json.Unmarshal([]byte(lines[0]), &h); err != nil || h.Type != "stream" || h.Stream != "global" || h.FirstSeq != all[seen].Seq {
			t.Fatalf("%s: header line %q: got %+v, %v", p, lines[0], h, err)
		}
		for _, line := range lines[1:] {
			want := marshalLine(t, all[seen])
			require.Equal(t, want, line, "%s: got line %s, want %s", p, line, want)
			seen++
		}
	}
	require.Equal(t, len(all), seen, "zstd printed %d events, want %d", seen, len(all))
}

// TestScanFiltered checks that a filtered scan yields exactly the events
// a full scan does, filtered the same way, from any start.
func TestScanFiltered(t *testing.T) {
	dir := t.TempDir()
	lg, err := OpenLog(dir, Options{SegmentSize: 4 << 10, MaxBatch: 7})
	require.NoError(t, err)
	defer lg.Close()
	for i := 0; i < 300; i++ {
		typ := TypeUserMessage
		if i%13 == 0 {
			typ = TypeMemoryRemember
		}
		_, err := lg.Append(context.Background(), "global", []Envelope{{ID: fmt.Sprintf("e%d", i), Type: typ,
			Time: "2026-08-18T10:00:00Z", Data: json.RawMessage(fmt.Sprintf(`{"text":"event %d"}`, i))}})
		require.NoError(t, err)
	}
	for _, from := range []uint64{0, 1, 2, 50, 299, 300, 301} {
		var want, got []Envelope
		require.NoError(t, lg.Scan("global", from, func(e Envelope) error {
			if e.Type == TypeMemoryRemember {
				want = append(want, e)
			}
			return nil
		}))
		keep := func(line []byte) bool { return bytes.Contains(line, []byte(`"type":"memory/remember"`)) }
		require.NoError(t, lg.ScanFiltered("global", from, keep, func(e Envelope) error {
			got = append(got, e)
			return nil
		}))
		require.True(t, reflect.DeepEqual(got, want), "from %d: got %d events, want %d", from, len(got), len(want))
		if from <= 1 && len(got) != 24 {
			t.Fatalf("from %d: got %d remembered events, want 24", from, len(got))
		}
	}
}
