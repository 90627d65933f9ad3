package recall_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recallNow is the query time of the recall tests.
var recallNow = time.Date(2026, 8, 20, 0, 0, 0, 0, time.UTC)

// memFixture is an index of entries for recall tests: 600 filler entries
// of common words and made-up tokens (bm25 is near zero on a handful of
// rows, and more than Weights.SmallCorpus (128) rows makes recall take the
// bounded candidate path), then the entries a test adds.
type memFixture struct {
	t      *testing.T
	s      *sqlstore.Store
	seq    map[string]uint64
	ids    map[string]string // test name → entry id
	fold   *projector.Projector
	stream string
}

var fillerWords = strings.Fields(`the a of and to in is it for on with as was at by this that from
note item record value system process data result change report 的 是 在 了 和 有 我们 一个 这个 系统 数据`)

func newMemFixture(t *testing.T) *memFixture {
	t.Helper()
	s, err := sqlstore.Open(filepath.Join(t.TempDir(), "index.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	f := &memFixture{t: t, s: s, seq: map[string]uint64{}, ids: map[string]string{}, fold: projector.New(s), stream: "ws-00000000000000000001"}
	rng := rand.New(rand.NewPCG(1, 2))
	var evs []events.Envelope
	for i := range 600 {
		var b strings.Builder
		for j := range 12 + rng.IntN(20) {
			if j > 0 {
				b.WriteByte(' ')
			}
			if rng.IntN(3) == 0 {
				fmt.Fprintf(&b, "tok%d", rng.IntN(3000))
			} else {
				b.WriteString(fillerWords[rng.IntN(len(fillerWords))])
			}
		}
		evs = append(evs, f.remember(f.stream, fmt.Sprintf("filler%d", i), map[string]any{"content": b.String()}, "2026-08-01T00:00:00Z"))
	}
	f.apply(evs...)
	return f
}

// remember makes a memory/remember event named name (its entry id is
// kept in f.ids).
func (f *memFixture) remember(stream, name string, data map[string]any, when string) events.Envelope {
	f.seq[stream]++
	seq := f.seq[stream]
	b, _ := json.Marshal(data)
	f.ids[name] = projector.EntryID(stream, seq, 0)
	return events.Envelope{V: 1, Stream: stream, Seq: seq, ID: "t:" + name, Type: events.TypeMemoryRemember, Time: when, Data: b}
}

func (f *memFixture) event(stream, typ, session string, data map[string]any) events.Envelope {
	f.seq[stream]++
	b, _ := json.Marshal(data)
	return events.Envelope{V: 1, Stream: stream, Seq: f.seq[stream], ID: fmt.Sprintf("t:%s:%d", stream, f.seq[stream]),
		Type: typ, Time: "2026-08-18T10:00:00Z", Session: session, Data: b}
}

func (f *memFixture) add(name string, data map[string]any) string {
	f.t.Helper()
	f.apply(f.remember(f.stream, name, data, "2026-08-10T00:00:00Z"))
	return f.ids[name]
}

func (f *memFixture) apply(evs ...events.Envelope) {
	f.t.Helper()
	require.NoError(f.t, f.fold.Fold(context.Background(), evs))
}

// setStatus sets the status of entry id and nothing else (not its
// version, nor when it was updated).
func (f *memFixture) setStatus(id, status string) {
	f.t.Helper()
	ctx := context.Background()
	e, ok, err := f.s.Entry(ctx, id)
	require.NoError(f.t, err, "entry %s: %v (found %v)", id, err, ok)
	require.True(f.t, ok, "entry %s: %v (found %v)", id, err, ok)
	tx, err := f.s.BeginFold(ctx)
	require.NoError(f.t, err)
	defer tx.Close()
	row, _, err := tx.LoadEntry(id, e.Scope)
	require.NoError(f.t, err)
	row.Status = status
	require.NoError(f.t, tx.UpdateEntry(&row, e.UpdatedSeq, e.UpdatedAt))
	require.NoError(f.t, tx.Commit())
}

func (f *memFixture) recall(q recall.Query) *recall.Result {
	f.t.Helper()
	if q.Now.IsZero() {
		q.Now = recallNow
	}
	if q.Timeout == 0 {
		q.Timeout = 10 * time.Second // the tests assert ranking, not speed
	}
	res, err := recall.Find(context.Background(), f.s, q)
	require.NoError(f.t, err, "recall %q", q.Text)
	return res
}

func ids(res *recall.Result) []string {
	var out []string
	for _, it := range res.Items {
		out = append(out, it.ID)
	}
	return out
}

func rankOf(res *recall.Result, id string) int {
	for i, it := range res.Items {
		if it.ID == id {
			return i
		}
	}
	return -1
}

func TestRecallRanking(t *testing.T) {
	f := newMemFixture(t)
	phrase := f.add("phrase", map[string]any{"content": "the memory injection logic fails after a restart"})
	scattered := f.add("scattered", map[string]any{"content": "logic of restart: injection runs before memory loads"})
	title := f.add("title", map[string]any{"title": "kubernetes", "content": "cluster upgrade notes for next week"})
	body := f.add("body", map[string]any{"title": "cluster notes", "content": "kubernetes upgrade for next week"})
	both := f.add("both", map[string]any{"content": "DSH 的记忆注入需要修复"})
	dshOnly := f.add("dshOnly", map[string]any{"content": "DSH host startup is slow on cold cache"})
	cnOnly := f.add("cnOnly", map[string]any{"content": "调整记忆注入的顺序"})
	word := f.add("word", map[string]any{"content": "我们的记忆注入逻辑需要修复"})
	camel := f.add("camel", map[string]any{"content": "the handler calls parseHTTPRequest before the cache"})
	path := f.add("path", map[string]any{"content": "the script /usr/local/bin/go_build.sh failed on CI"})

	tests := []struct {
		name   string
		query  string
		first  string    // must rank first
		before [2]string // [0] must rank above [1] (both present)
		has    []string
	}{
		{name: "ExactPhraseBeatsScattered", query: "memory injection logic", first: phrase, before: [2]string{phrase, scattered}},
		{name: "TitleBeatsBody", query: "kubernetes", first: title, before: [2]string{title, body}},
		{name: "TwoCharChineseFindsWord", query: "记忆", has: []string{word, both, cnOnly}},
		{name: "MixedQueryBothPartsFirst", query: "DSH 记忆注入", first: both, has: []string{dshOnly, cnOnly, word}},
		{name: "CamelCasePart", query: "request", first: camel},
		{name: "PathWhole", query: "go_build.sh", first: path},
		{name: "PathPart", query: "build", first: path},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.recall(recall.Query{Text: tt.query})
			got := ids(res)
			if tt.first != "" && (len(got) == 0 || got[0] != tt.first) {
				t.Errorf("recall %q: got %v, want %s first", tt.query, got, tt.first)
			}
			if tt.before[0] != "" {
				a, b := rankOf(res, tt.before[0]), rankOf(res, tt.before[1])
				assert.False(t, a < 0 || b < 0 || a > b, "recall %q: ranks %d and %d, want %s above %s (got %v)", tt.query, a, b, tt.before[0], tt.before[1], got)
			}
			for _, id := range tt.has {
				assert.False(t, rankOf(res, id) < 0, "recall %q: got %v, want %s among them", tt.query, got, id)
			}
		})
	}
	t.Run("EnumeratedPathAgrees", func(t *testing.T) {
		// Force the bounded candidate path on a corpus this small too.
		w := recall.DefaultWeights
		w.SmallCorpus = 0
		res := f.recall(recall.Query{Text: "DSH 记忆注入", Weights: &w})
		got := ids(res)
		assert.False(t, len(got) == 0 || got[0] != both || rankOf(res, dshOnly) < 0 || rankOf(res, cnOnly) < 0, "got %v, want %s first, %s and %s present", got, both, dshOnly, cnOnly)
	})
}

// TestRecallFetchCap: when the gathered pool is larger than FetchCap,
// the rows the postings show holding the most query mass are the ones
// read and scored, however old they are.
func TestRecallFetchCap(t *testing.T) {
	f := newMemFixture(t)
	// The target is older than every other holder of its terms: in
	// enumeration order (rarest term first, newest first) it comes last
	// among qzxa's rows.
	target := f.add("target", map[string]any{"content": "qzxa qzxd ledger"})
	for i := range 20 {
		for _, term := range []string{"qzxa", "qzxb", "qzxc", "qzxd"} {
			f.add(fmt.Sprintf("%s-%d", term, i), map[string]any{"content": term + " filler note"})
		}
	}
	w := recall.DefaultWeights
	w.FetchCap = 8
	res := f.recall(recall.Query{Text: "qzxa qzxb qzxc qzxd", Weights: &w})
	assert.Equal(t, w.FetchCap, res.Candidates, "scored %d candidates, want FetchCap %d", res.Candidates, w.FetchCap)
	got := ids(res)
	assert.False(t, len(got) == 0 || got[0] != target, "got %v, want %s (the one row holding two of the terms) first", got, target)
}

// TestRecallSplitChars: the one-character parts of a split identifier
// are not query terms; a character written on its own is.
func TestRecallSplitChars(t *testing.T) {
	f := newMemFixture(t)
	f.add("ident", map[string]any{"content": "bump w0c90 before release"})
	f.add("letter", map[string]any{"content": "x"})
	item3 := f.add("item3", map[string]any{"content": "release checklist item 3: tag the build"})
	f.add("item4", map[string]any{"content": "release checklist item 4: tag the build"})
	tests := []struct {
		query string
		want  []string
	}{
		{"w0c90", []string{"w0c90", "90"}},
		{"x w0c90", []string{"x", "w0c90", "90"}},
		{"x", []string{"x"}},
	}
	for _, tt := range tests {
		res := f.recall(recall.Query{Text: tt.query})
		got := append([]string(nil), res.Terms...)
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tt.want))
		assert.True(t, slices.Equal(got, want), "recall %q: terms %q, want %q", tt.query, res.Terms, tt.want)
	}
	res := f.recall(recall.Query{Text: "checklist item 3"})
	got := ids(res)
	assert.False(t, len(got) == 0 || got[0] != item3 || !slices.Contains(res.Terms, "3"), "recall %q: got %v (terms %q), want %s first through the term 3", "checklist item 3", got, res.Terms, item3)
}

func TestRecallStatus(t *testing.T) {
	f := newMemFixture(t)
	active := f.add("active", map[string]any{"content": "indentation in python files uses four spaces"})
	conflict := f.add("conflict", map[string]any{"content": "use tabs for indentation in the Makefile"})
	superseded := f.add("superseded", map[string]any{"content": "zebra deploy runs on fridays"})
	forgotten := f.add("forgotten", map[string]any{"content": "zebra deploy key rotation schedule"})
	f.apply(f.event(f.stream, events.TypeMemoryForget, "", map[string]any{"entryId": forgotten}))
	// Supersede and conflict are memory/ops folds; the index is what
	// recall reads, so set the statuses directly.
	for id, st := range map[string]string{conflict: "conflict", superseded: "superseded"} {
		f.setStatus(id, st)
	}
	t.Run("SupersededAndForgottenNever", func(t *testing.T) {
		for _, q := range []string{"zebra deploy", "zebra", "zebra deploy runs on fridays", superseded, forgotten} {
			res := f.recall(recall.Query{Text: q})
			assert.False(t, rankOf(res, superseded) >= 0 || rankOf(res, forgotten) >= 0, "recall %q: got %v, want neither %s nor %s", q, ids(res), superseded, forgotten)
		}
	})
	t.Run("ConflictWhenHit", func(t *testing.T) {
		res := f.recall(recall.Query{Text: "tabs Makefile"})
		i := rankOf(res, conflict)
		require.False(t, i < 0, "got %v, want %s", ids(res), conflict)
		assert.False(t, !strings.Contains(strings.Join(res.Items[i].Flags, ","), recall.FlagConflict) || res.Items[i].Status != "conflict", "got flags %v status %s, want conflict", res.Items[i].Flags, res.Items[i].Status)
	})
	t.Run("ConflictNotWhenMissed", func(t *testing.T) {
		res := f.recall(recall.Query{Text: "indentation of python files with spaces"})
		assert.False(t, rankOf(res, active) < 0 || rankOf(res, conflict) >= 0, "got %v, want %s and not %s", ids(res), active, conflict)
	})
	t.Run("ReviewWhenStale", func(t *testing.T) {
		res := f.recall(recall.Query{Text: "python indentation", Now: recallNow.Add(200 * 24 * time.Hour)})
		i := rankOf(res, active)
		assert.False(t, i < 0 || !strings.Contains(strings.Join(res.Items[i].Flags, ","), recall.FlagReview), "got %+v, want %s flagged review", res.Items, active)
		res = f.recall(recall.Query{Text: "python indentation"})
		if i := rankOf(res, active); i < 0 || len(res.Items[i].Flags) != 0 {
			t.Errorf("got %+v, want %s without flags", res.Items, active)
		}
	})
}

func TestRecallBytes(t *testing.T) {
	f := newMemFixture(t)
	for i := range 5 {
		f.add(fmt.Sprintf("long%d", i), map[string]any{"title": "长文", "content": strings.Repeat("长文本记忆条目内容", 20) + fmt.Sprint(i)})
	}
	for _, budget := range []int{1, 7, 100, 1001} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			res := f.recall(recall.Query{Text: "长文本", Bytes: budget})
			total := 0
			for _, it := range res.Items {
				total += len(it.Title) + len(it.Text)
				assert.True(t, utf8.ValidString(it.Text), "text %q is not valid UTF-8", it.Text)
			}
			assert.False(t, total > budget, "got %d bytes, want at most %d", total, budget)
			if budget >= 100 {
				last := res.Items[len(res.Items)-1]
				assert.Contains(t, strings.Join(last.Flags, ","), recall.FlagTruncated, "last item flags %v, want truncated", last.Flags)
			}
		})
	}
	// A budget under the best match's title still answers with it, its
	// title cut; one under its first character says so, not "nothing
	// matches".
	t.Run("UnderATitle", func(t *testing.T) {
		res := f.recall(recall.Query{Text: "长文本", Bytes: 4})
		require.Len(t, res.Items, 1, "got %+v", res.Items)
		assert.Equal(t, "长", res.Items[0].Title)
		assert.Empty(t, res.Items[0].Text)
		assert.Contains(t, res.Items[0].Flags, recall.FlagTruncated)
		assert.Empty(t, res.Guidance)
		res = f.recall(recall.Query{Text: "长文本", Bytes: 2})
		require.Empty(t, res.Items)
		assert.Contains(t, res.Guidance, "a byte budget of 2 holds none of them: raise --bytes")
		assert.NotContains(t, res.Guidance, "Nothing in")
	})
	t.Run("DefaultCaps", func(t *testing.T) {
		for i := range 10 {
			f.add(fmt.Sprintf("short%d", i), map[string]any{"content": fmt.Sprintf("quokka sighting number %d", i)})
		}
		res := f.recall(recall.Query{Text: "quokka"})
		assert.Len(t, res.Items, recall.DefaultLimit, "got %d items, want %d", len(res.Items), recall.DefaultLimit)
	})
}

func TestRecallShownRotates(t *testing.T) {
	f := newMemFixture(t)
	want := map[string]bool{}
	for i := range 3 {
		want[f.add(fmt.Sprintf("rot%d", i), map[string]any{"content": "rotation probe alpha"})] = true
	}
	seen := map[string]bool{}
	for range 3 {
		res := f.recall(recall.Query{Text: "rotation probe", Limit: 1, Session: "s1"})
		require.Len(t, res.Items, 1, "got %v, want one item", ids(res))
		id := res.Items[0].ID
		require.False(t, seen[id], "entry %s shown twice in 3 recalls (seen %v)", id, seen)
		seen[id] = true
		f.apply(f.event(f.stream, events.TypeMemoryShown, "s1", map[string]any{"entries": []string{id}, "session": "s1", "mode": "recall"}))
	}
	for id := range want {
		assert.True(t, seen[id], "entry %s never shown; got %v", id, seen)
	}
	t.Run("OtherSessionUnaffected", func(t *testing.T) {
		a := f.recall(recall.Query{Text: "rotation probe", Limit: 1, Session: "s2"})
		b := f.recall(recall.Query{Text: "rotation probe", Limit: 1})
		assert.False(t, len(a.Items) != 1 || len(b.Items) != 1 || a.Items[0].ID != b.Items[0].ID, "got %v and %v, want the same first entry", ids(a), ids(b))
	})
}

func TestRecallDeadline(t *testing.T) {
	f := newMemFixture(t)
	f.add("a", map[string]any{"content": "walrus migration plan for the index"})
	f.add("b", map[string]any{"content": "walrus schema notes"})
	t.Run("PartialWithNote", func(t *testing.T) {
		// A clock that jumps past the deadline after a few reads: the
		// recall stops probing terms and scores what it has.
		base := time.Now()
		calls := 0
		clock := func() time.Time {
			calls++
			if calls > 3 {
				return base.Add(time.Hour)
			}
			return base
		}
		w := recall.DefaultWeights
		w.SmallCorpus = 0
		res := f.recall(recall.Query{Text: "walrus migration plan index schema", Clock: clock, Weights: &w})
		require.True(t, res.Partial, "got partial %v note %q, want a partial result with a note", res.Partial, res.Note)
		require.NotEqualValues(t, "", res.Note, "got partial %v note %q, want a partial result with a note", res.Partial, res.Note)
		assert.NotEqualValues(t, 0, len(res.Items), "got no items, want what the first probes found")
	})
	t.Run("DefaultIs250ms", func(t *testing.T) {
		// With no Timeout the deadline is 250 ms after the start: a clock
		// that stays at start+249ms gives a whole result, one at
		// start+251ms a partial one. No real time passes.
		w := recall.DefaultWeights
		w.SmallCorpus = 0
		for _, tc := range []struct {
			after   time.Duration
			partial bool
		}{{249 * time.Millisecond, false}, {251 * time.Millisecond, true}} {
			base := time.Now()
			first := true
			clock := func() time.Time {
				if first {
					first = false
					return base
				}
				return base.Add(tc.after)
			}
			// recall.Find directly: the fixture's helper sets a long Timeout.
			res, err := recall.Find(context.Background(), f.s, recall.Query{Text: "walrus migration plan index schema", Clock: clock, Weights: &w, Now: recallNow})
			require.NoError(t, err)
			assert.Equal(t, tc.partial, res.Partial, "a clock %v past the start: partial %v (%q)", tc.after, res.Partial, res.Note)
		}
	})
	t.Run("TinyTimeoutNoError", func(t *testing.T) {
		res, err := recall.Find(context.Background(), f.s, recall.Query{Text: "walrus migration", Timeout: time.Nanosecond, Now: recallNow})
		require.NoError(t, err, "got error %v, want a partial result", err)
		assert.False(t, !res.Partial || res.Note == "", "got partial %v note %q, want partial with a note", res.Partial, res.Note)
	})
}

func TestRecallExact(t *testing.T) {
	f := newMemFixture(t)
	long := strings.Repeat("整条记忆的全文。", 1000)
	id := f.add("whole", map[string]any{"title": "whole entry", "content": long})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go-style.md"), []byte("# Go style\n\nWrap errors.\n"), 0o600))
	t.Run("EntryID", func(t *testing.T) {
		res := f.recall(recall.Query{Text: id, KnowledgeDir: dir})
		require.Len(t, res.Items, 1, "got %d items, want the whole entry %s", len(res.Items), id)
		require.Equal(t, long, res.Items[0].Text, "got %d items, want the whole entry %s", len(res.Items), id)
		require.Equal(t, recall.KindSemantic, res.Items[0].Kind, "got %d items, want the whole entry %s", len(res.Items), id)
	})
	for _, q := range []string{"go-style", "go-style.md"} {
		t.Run("KnowledgeFile/"+q, func(t *testing.T) {
			res := f.recall(recall.Query{Text: q, KnowledgeDir: dir})
			require.Len(t, res.Items, 1, "got %+v, want the file", res.Items)
			require.Equal(t, recall.KindKnowledge, res.Items[0].Kind, "got %+v, want the file", res.Items)
			require.Contains(t, res.Items[0].Text, "Wrap errors.", "got %+v, want the file", res.Items)
		})
	}
	t.Run("NoFileEscape", func(t *testing.T) {
		res := f.recall(recall.Query{Text: "../" + filepath.Base(dir) + "/go-style", KnowledgeDir: dir})
		for _, it := range res.Items {
			require.NotEqual(t, recall.KindKnowledge, it.Kind, "got %+v, want no file for a path", it)
		}
	})
	t.Run("Guidance", func(t *testing.T) {
		res := f.recall(recall.Query{Text: "xylophone quasar"})
		assert.False(t, len(res.Items) != 0 || !strings.Contains(res.Guidance, "xylophone quasar") || !strings.Contains(res.Guidance, "Try"), "got %d items, guidance %q; want none and guidance naming the query", len(res.Items), res.Guidance)
	})
}

func TestRecallKinds(t *testing.T) {
	f := newMemFixture(t)
	entry := f.add("entry", map[string]any{"content": "pelican release checklist"})
	var evs []events.Envelope
	for i := range 50 {
		evs = append(evs, f.event("ws-b", events.TypeAssistantMessage, "s2", map[string]any{"text": fmt.Sprintf("unrelated chatter %d", i)}))
	}
	msg := f.event("ws-b", events.TypeUserMessage, "s2", map[string]any{"text": "did the pelican release go out?"})
	evs = append(evs, msg)
	f.apply(evs...)
	t.Run("Episodic", func(t *testing.T) {
		res := f.recall(recall.Query{Text: "pelican release", Kind: recall.KindEpisodic})
		require.Len(t, res.Items, 1, "got %+v, want event %s", res.Items, msg.ID)
		require.NotNil(t, res.Items[0].Episode, "got %+v, want event %s", res.Items, msg.ID)
		require.Equal(t, msg.ID, res.Items[0].Episode.EventID, "got %+v, want event %s", res.Items, msg.ID)
	})
	t.Run("All", func(t *testing.T) {
		res := f.recall(recall.Query{Text: "pelican release", Kind: recall.KindAll})
		require.False(t, rankOf(res, entry) < 0, "got %v, want both %s and %s", ids(res), entry, msg.ID)
		require.False(t, rankOf(res, msg.ID) < 0, "got %v, want both %s and %s", ids(res), entry, msg.ID)
	})
	t.Run("ScopeFilter", func(t *testing.T) {
		res := f.recall(recall.Query{Text: "pelican release", Kind: recall.KindAll, Scopes: []string{"ws-b"}})
		require.False(t, rankOf(res, entry) >= 0, "got %v, want only %s", ids(res), msg.ID)
		require.False(t, rankOf(res, msg.ID) < 0, "got %v, want only %s", ids(res), msg.ID)
	})
	t.Run("BadKind", func(t *testing.T) {
		_, err := recall.Find(context.Background(), f.s, recall.Query{Text: "x", Kind: "nope"})
		require.Error(t, err, "got nil error, want one for kind nope")
	})
}
