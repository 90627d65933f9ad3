package projector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"dshmem/events"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mixed returns events of three streams, each in seq order, interleaved.
func mixed() (all []events.Envelope, byStream map[string][]events.Envelope) {
	byStream = map[string][]events.Envelope{
		"global":  corpus("global", 150, 120, 1),
		"ws-aaaa": corpus("ws-aaaa", 300, 200, 2),
		"ws-bbbb": corpus("ws-bbbb", 220, 80, 3),
	}
	// Round-robin interleave: every stream stays in seq order.
	for i := 0; ; i++ {
		added := false
		for _, s := range []string{"global", "ws-aaaa", "ws-bbbb"} {
			if i < len(byStream[s]) {
				all = append(all, byStream[s][i])
				added = true
			}
		}
		if !added {
			return all, byStream
		}
	}
}

func TestFoldIdempotent(t *testing.T) {
	all, _ := mixed()
	s := openStore(t)
	p := New(s)
	mustFold(t, p, all)
	want := dump(t, s)
	require.Contains(t, want, "episodes_fts\t", "dump lacks projections:\n%.2000s", want)
	require.Contains(t, want, "entries\t", "dump lacks projections:\n%.2000s", want)
	require.Contains(t, want, "sessions\t", "dump lacks projections:\n%.2000s", want)
	t.Run("SameEventsAgain", func(t *testing.T) {
		mustFold(t, p, all)
		got := dump(t, s)
		assert.Equal(t, want, got, "folding the same events twice changed the index")
	})
	t.Run("OverlappingBatches", func(t *testing.T) {
		mustFold(t, p, all[100:600])
		mustFold(t, p, all[:50])
		got := dump(t, s)
		assert.Equal(t, want, got, "refolding parts changed the index")
	})
	t.Run("Cursors", func(t *testing.T) {
		cur, err := s.Cursors()
		require.NoError(t, err)
		assert.False(t, cur["global"] != 150 || cur["ws-aaaa"] != 300 || cur["ws-bbbb"] != 220 || len(cur) != 3, "got cursors %v", cur)
	})
}

func TestFoldOrderIndependent(t *testing.T) {
	all, by := mixed()
	want := foldedDump(t, all)
	for _, order := range [][]string{
		{"ws-bbbb", "global", "ws-aaaa"},
		{"ws-aaaa", "ws-bbbb", "global"},
	} {
		t.Run("Equal", func(t *testing.T) {
			s := openStore(t)
			p := New(s)
			for _, st := range order {
				evs := by[st]
				// Uneven batches too: the split must not matter.
				mustFold(t, p, evs[:len(evs)/3])
				mustFold(t, p, evs[len(evs)/3:])
			}
			got := dump(t, s)
			assert.Equal(t, want, got, "order %v: dump differs from folding everything at once\n%s", order, firstDiff(got, want))
		})
	}
}

func TestFoldGap(t *testing.T) {
	all, by := mixed()
	_ = all
	s := openStore(t)
	p := New(s)
	mustFold(t, p, by["ws-aaaa"][:10])
	before := dump(t, s)
	batch := append([]events.Envelope{}, by["global"][:5]...) // fine on its own
	batch = append(batch, by["ws-aaaa"][12:15]...)            // seq 13 after cursor 10
	err := p.Fold(context.Background(), batch)
	var gap *GapError
	require.ErrorIs(t, err, ErrGap, "got %v, want a *GapError", err)
	require.True(t, errors.As(err, &gap), "got %v, want a *GapError", err)
	assert.False(t, gap.Stream != "ws-aaaa" || gap.Cursor != 10 || gap.Seq != 13, "got %+v, want stream ws-aaaa, cursor 10, seq 13", gap)
	got := dump(t, s)
	assert.Equal(t, before, got, "a fold that failed on a gap committed rows")
}

func TestFoldAtomic(t *testing.T) {
	_, by := mixed()
	s := openStore(t)
	p := New(s)
	mustFold(t, p, by["ws-bbbb"][:20])
	before := dump(t, s)

	// Valid events of two streams, then one whose id repeats an earlier
	// event of its stream: the events insert fails on UNIQUE(stream, id)
	// after many rows of the call were written.
	batch := append([]events.Envelope{}, by["global"][:100]...)
	batch = append(batch, by["ws-bbbb"][20:60]...)
	bad := by["ws-bbbb"][60]
	bad.ID = by["ws-bbbb"][3].ID
	batch = append(batch, bad)
	err := p.Fold(context.Background(), batch)
	require.Error(t, err, "got %v, want an error naming seq 61", err)
	require.Contains(t, err.Error(), "seq 61", "got %v, want an error naming seq 61", err)
	got := dump(t, s)
	assert.Equal(t, before, got, "a failed fold left rows behind:\n%s", firstDiff(got, before))
	for stream, want := range map[string]uint64{"global": 0, "ws-bbbb": 20} {
		c, err := s.Cursor(stream)
		assert.False(t, err != nil || c != want, "cursor of %s: got %d, %v; want %d", stream, c, err, want)
	}
	// The same call without the bad event goes through.
	mustFold(t, p, batch[:len(batch)-1])
	c, _ := s.Cursor("ws-bbbb")
	assert.EqualValues(t, 60, c, "got cursor %d after the good part, want 60", c)
}

func TestFoldErrBadPosition(t *testing.T) {
	s := openStore(t)
	p := New(s)
	for _, e := range []events.Envelope{
		ev("", 1, events.TypeTurnEnd, "", nil),
		ev("global", 0, events.TypeTurnEnd, "", nil),
	} {
		err := p.Fold(context.Background(), []events.Envelope{e})
		assert.Error(t, err, "stream %q seq %d: got nil error", e.Stream, e.Seq)
	}
}

func TestFoldContextCanceled(t *testing.T) {
	_, by := mixed()
	s := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := New(s).Fold(ctx, by["global"])
	assert.ErrorIs(t, err, context.Canceled, "got %v, want context.Canceled", err)
	c, _ := s.Cursor("global")
	assert.EqualValues(t, 0, c, "got cursor %d, want 0", c)
}

func TestCatchUp(t *testing.T) {
	all, by := mixed()
	want := foldedDump(t, all)

	s := openStore(t)
	p := New(s)
	p.ChunkSize = 64
	mustFold(t, p, by["ws-aaaa"][:123]) // a partial fold before the crash
	mustFold(t, p, by["global"][:1])
	type report struct {
		stream string
		seq    uint64
	}
	var reports []report
	require.NoError(t, p.CatchUp(context.Background(), newFakeSource(all), func(stream string, seq uint64) {
		reports = append(reports, report{stream, seq})
	}))
	got := dump(t, s)
	assert.Equal(t, want, got, "catch-up after a partial fold differs from folding everything:\n%s", firstDiff(got, want))
	// Streams in name order, chunks of 64 from the cursor, last one partial.
	assert.False(t, len(reports) == 0 || reports[0] != (report{"global", 65}) || reports[len(reports)-1] != (report{"ws-bbbb", 220}), "got progress %v", reports)
	t.Run("NothingNew", func(t *testing.T) {
		reports = nil
		require.NoError(t, p.CatchUp(context.Background(), newFakeSource(all), func(s string, q uint64) { reports = append(reports, report{s, q}) }))
		assert.Len(t, reports, 0, "got progress %v with nothing to fold", reports)
	})
}

// firstDiff shows the first differing line of two dumps.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		gl, wl := lineAt(g, i), lineAt(w, i)
		if gl != wl {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, trunc(gl), trunc(wl))
		}
	}
	return "(equal)"
}

// lineAt is lines[i], or "" past the end.
func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

func trunc(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// The event log is the Source CatchUp reads in production.
var _ Source = (*events.Log)(nil)

// FoldMade returns a remember's entry only when it is what the index
// holds after the commit: a forget of it in the same fold changes it, so
// that fold returns none and its caller reads the index.
func TestFoldMadeIsTheCommittedEntry(t *testing.T) {
	s := openStore(t)
	p := New(s)
	id := EntryID("ws-a", 1, 0)
	made, err := p.FoldMade(context.Background(), []events.Envelope{
		ev("ws-a", 1, events.TypeMemoryRemember, "", map[string]any{"content": "kept", "tags": []string{"x"}}),
		ev("ws-a", 2, events.TypeMemoryRemember, "", map[string]any{"content": "no tags"}),
	})
	require.NoError(t, err)
	require.Len(t, made, 2)
	for mid, en := range made {
		require.Equal(t, mustRead(t, s, mid), en, "entry %s", mid)
	}
	made, err = p.FoldMade(context.Background(), []events.Envelope{
		ev("ws-a", 3, events.TypeMemoryRemember, "", map[string]any{"content": "forgotten in the same fold"}),
		ev("ws-a", 4, events.TypeMemoryForget, "", map[string]any{"entryId": EntryID("ws-a", 3, 0)}),
	})
	require.NoError(t, err)
	require.Nil(t, made, "a fold with a forget returned entries as made: %v", made)
	require.Equal(t, "kept", mustRead(t, s, id).Content)
}
