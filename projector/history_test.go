package projector

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHistoryOnTextChange: summary_history/ gets a version when a memory
// event changes the summary's text, not on every memory event, and the
// versions kept do not depend on how the log was split into folds.
func TestHistoryOnTextChange(t *testing.T) {
	const ws = "ws-cccccccccccccccccccc"
	rem := func(seq uint64, content string) events.Envelope {
		return ev(ws, seq, events.TypeMemoryRemember, "", map[string]any{"content": content, "type": "fact"})
	}
	noop := func(seq uint64) events.Envelope { // forgets an entry that does not exist: changes nothing
		return ev(ws, seq, events.TypeMemoryForget, "", map[string]any{"entryId": "m-0000000000000000"})
	}
	evs := []events.Envelope{rem(1, "first"), noop(2), rem(3, "second"), noop(4), noop(5), rem(6, "third")}
	want := []string{HistoryPath(ws, 1), HistoryPath(ws, 3), HistoryPath(ws, 6)}
	for _, split := range []int{1, 2, len(evs)} {
		root := t.TempDir()
		p := New(openStore(t))
		p.Root = root
		for i := 0; i < len(evs); i += split {
			mustFold(t, p, evs[i:min(i+split, len(evs))])
		}
		got, _ := filepath.Glob(filepath.Join(root, ScopesDir, ws, HistoryDir, "*.md"))
		require.Len(t, got, len(want), "split %d: got versions %v, want %v", split, got, want)
		for i, g := range got {
			rel, _ := filepath.Rel(root, g)
			assert.Equal(t, want[i], filepath.ToSlash(rel), "split %d: got version %s, want %s", split, rel, want[i])
		}
		last, _ := os.ReadFile(got[len(got)-1])
		r, ok, err := p.Render(context.Background(), SummaryPath(ws))
		assert.False(t, err != nil || !ok || string(r.Data) != string(last), "split %d: the newest version differs from the summary (%v)", split, err)
	}
}

// TestUnrecordedFileRemoved: a history file a write put in place but
// failed to record (its files_intent row is all that says it is ours) is
// removed once it is no longer kept, not left behind for ever.
func TestUnrecordedFileRemoved(t *testing.T) {
	const ws = "ws-dddddddddddddddddddd"
	ctx := context.Background()
	root := t.TempDir()
	p := New(openStore(t))
	p.Root = root
	var evs []events.Envelope
	for seq := uint64(1); seq <= 12; seq++ {
		evs = append(evs, ev(ws, seq, events.TypeMemoryRemember, "", map[string]any{"content": fmt.Sprintf("fact %d", seq), "type": "fact"}))
	}
	mustFold(t, p, evs)
	orphan := HistoryPath(ws, 1) // older than the 10 kept (3..12)
	data := []byte("a version written, never recorded\n")
	abs := filepath.Join(root, filepath.FromSlash(orphan))
	require.NoError(t, os.WriteFile(abs, data, 0o644))
	require.NoError(t, p.s.RecordFileIntents(ctx, []sqlstore.FileIntent{{Path: orphan, SHA256: SHA256(data)}}))
	require.NoError(t, p.enqueue(ctx, []string{groupScope + ws}))
	require.NoError(t, p.WriteQueued(ctx))
	if _, err := os.Stat(abs); !os.IsNotExist(err) {
		t.Errorf("%s: got %v, want it removed", orphan, err)
	}
	left, err := p.s.FileIntents(ctx)
	require.NoError(t, err)
	n := len(left)
	assert.EqualValues(t, 0, n, "got %d files_intent rows left, want 0", n)
}

// TestHistorySplitIndependent: which summary versions exist, and their
// bytes, do not depend on how the log is split into folds, with remembers
// that add nothing, forgets that change the count or nothing, and more
// than HistoryKeep versions in one fold (whose older ones are never
// rendered).
func TestHistorySplitIndependent(t *testing.T) {
	const ws = "ws-eeeeeeeeeeeeeeeeeeee"
	var evs []events.Envelope
	seq := uint64(0)
	add := func(typ string, data map[string]any) {
		seq++
		evs = append(evs, ev(ws, seq, typ, "", data))
	}
	for i := 0; i < 40; i++ {
		switch {
		case i%7 == 3:
			add(events.TypeMemoryRemember, map[string]any{"content": "  "}) // adds nothing
		case i == 20:
			add(events.TypeMemoryForget, map[string]any{"entryId": EntryID(ws, 2, 0)}) // count −1
		case i == 21:
			add(events.TypeMemoryForget, map[string]any{"entryId": EntryID(ws, 2, 0)}) // already forgotten
		default:
			add(events.TypeMemoryRemember, map[string]any{"content": fmt.Sprintf("fact %d", i), "type": "fact", "importance": i % 4})
		}
	}
	var want string
	for _, split := range []int{1, 3, 11, len(evs)} {
		root := t.TempDir()
		s := openStore(t)
		p := New(s)
		p.Root = root
		for i := 0; i < len(evs); i += split {
			mustFold(t, p, evs[i:min(i+split, len(evs))])
		}
		var b bytes.Buffer
		require.NoError(t, DumpFiles(context.Background(), s, &b))
		if want == "" {
			want = b.String()
			continue
		}
		assert.Equal(t, want, b.String(), "split %d: the files and summary versions differ from the one-event folds", split)
	}
	n := strings.Count(want, "summary_versions\t")
	assert.Equal(t, HistoryKeep, n, "got %d summary versions, want %d", n, HistoryKeep)
}

// TestHistoryTopPlaced: summary versions made in one fold of many
// remembers, where each new entry is placed in the top of the ranking the
// fold last rendered (summaryText) instead of a render from the index,
// equal those of one-event folds, which always render from the index.
// Each of eight workspaces gets 20 entries in a first fold and a burst of
// 10 remembers in a second, so every version of the burst is kept and
// compared. The entries are long enough that the byte budget cuts the
// summary, and their importance and type vary, so new entries land at
// the top, in the middle, at the cut and below the part read; a forget
// and a remember that adds nothing come in between; in two workspaces of
// short entries every entry read fits, with more left out and with none,
// and in one a burst of short entries ranked first makes the whole top
// held fit (so the summary needs more of the index than the top it
// holds).
func TestHistoryTopPlaced(t *testing.T) {
	types := []string{"fact", "rule", "preference", "fix", "decision", "procedure", "architecture"}
	var first, burst []events.Envelope
	for w := 0; w < 8; w++ {
		ws := fmt.Sprintf("ws-%020d", w)
		seq := uint64(0)
		add := func(to *[]events.Envelope, typ string, data map[string]any) {
			seq++
			*to = append(*to, ev(ws, seq, typ, "", data))
		}
		remember := func(to *[]events.Envelope, i int) {
			if w == 5 && i >= 20 { // short and first: the top comes to fit whole
				add(to, events.TypeMemoryRemember, map[string]any{"content": fmt.Sprintf("brief %d", i), "type": "preference", "importance": 3})
				return
			}
			if w >= 6 { // short: every entry of the top read fits
				add(to, events.TypeMemoryRemember, map[string]any{"content": fmt.Sprintf("short %d", i), "importance": i % 4})
				return
			}
			k := i*(w+3) + w
			words := 10 + (k*7)%40
			if w == 5 {
				words = 16
			}
			add(to, events.TypeMemoryRemember, map[string]any{"content": strings.Repeat(fmt.Sprintf("word%d ", i), words),
				"title": fmt.Sprintf("entry %03d", (k*37)%101), "type": types[(k*5)%len(types)], "importance": (k * 3) % (4 - w/5)})
		}
		for i := 0; i < 20; i++ {
			if w != 6 || i < 3 { // workspace 6 shows every entry
				remember(&first, i)
			}
		}
		for i := 20; i < 30; i++ {
			switch {
			case w == 1 && i == 24:
				add(&burst, events.TypeMemoryForget, map[string]any{"entryId": EntryID(ws, 3, 0)})
			case w == 2 && i == 25:
				add(&burst, events.TypeMemoryRemember, map[string]any{"content": "\t"}) // adds nothing
			default:
				remember(&burst, i)
			}
		}
	}
	all := append(slices.Clone(first), burst...)
	// fresh: a projector of its own per fold, so no fold places into
	// the tops of the fold before it (Projector.keptTops).
	dump := func(fresh bool, folds ...[]events.Envelope) string {
		s := openStore(t)
		p := New(s)
		root := t.TempDir()
		p.Root = root
		for _, evs := range folds {
			if fresh {
				p = New(s)
				p.Root = root
			}
			mustFold(t, p, evs)
		}
		var b bytes.Buffer
		require.NoError(t, DumpFiles(context.Background(), s, &b))
		return b.String()
	}
	var one [][]events.Envelope
	for i := range all {
		one = append(one, all[i:i+1])
	}
	want := dump(true, one...)
	require.Equal(t, 8*HistoryKeep, strings.Count(want, "summary_versions\t"), "every version of the bursts is kept")
	assert.Equal(t, want, dump(false, first, burst), "the files and summary versions of two folds differ from the one-event folds")
	assert.Equal(t, want, dump(false, one...), "placing into the tops of the fold before differs from reading them")
}

// A projector keeps a fold's summary tops for the next fold only while
// nothing but folds writes entries: after the index is replaced by one
// with other entries (as many, so the shown count does not tell), the
// next remember's summary version shows the new index's entries.
func TestKeptTopsDroppedOnReplace(t *testing.T) {
	ctx := context.Background()
	ws := fmt.Sprintf("ws-%020d", 1)
	open := func(dir string) (*sqlstore.Store, string) {
		path := filepath.Join(dir, "index.db")
		s, err := sqlstore.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s, path
	}
	remembers := func(word string) []events.Envelope {
		var evs []events.Envelope
		for i := 1; i <= 5; i++ {
			evs = append(evs, ev(ws, uint64(i), events.TypeMemoryRemember, "", map[string]any{"content": fmt.Sprintf("%s %d", word, i)}))
		}
		return evs
	}
	live, _ := open(t.TempDir())
	p := New(live)
	p.Root = t.TempDir()
	for _, e := range remembers("old") {
		mustFold(t, p, []events.Envelope{e})
	}
	other, otherPath := open(t.TempDir())
	q := New(other)
	q.Root = t.TempDir()
	for _, e := range remembers("new") {
		mustFold(t, q, []events.Envelope{e})
	}
	require.NoError(t, other.Close())
	require.NoError(t, live.ReplaceWith(ctx, otherPath))
	mustFold(t, p, []events.Envelope{ev(ws, 6, events.TypeMemoryRemember, "", map[string]any{"content": "after"})})
	vs, err := live.Reader().SummaryVersions(ctx, ws)
	require.NoError(t, err)
	last := vs[len(vs)-1].Content
	assert.Contains(t, last, "new 3", "the version after the replace shows the replaced index's entries")
	assert.NotContains(t, last, "old 3", "the version after the replace shows entries of the index before it")
}
