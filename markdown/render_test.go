package markdown

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderIgnoresInputOrder(t *testing.T) {
	es := fixtureEntries()
	renderers := []struct {
		name   string
		render func([]Entry) []byte
	}{
		{"Global", RenderGlobal},
		{"Index", func(es []Entry) []byte { return RenderIndex(fixtureTopics(), es) }},
		{"Knowledge", func(es []Entry) []byte { return RenderKnowledge("Go tooling", es) }},
		{"Summary", func(es []Entry) []byte { return RenderSummary(SummaryInput{ScopeKey: "ws-1", Cwd: "/p", Entries: es}) }},
		{"SummaryCut", func(es []Entry) []byte {
			return RenderSummary(SummaryInput{ScopeKey: "ws-1", Cwd: "/p", Entries: es, MaxBytes: 700})
		}},
	}
	// a duplicate id with different fields must not make the order matter
	dup := es[0]
	dup.Content = "another version of the same id"
	es = append(es, dup)
	for _, r := range renderers {
		t.Run(r.name, func(t *testing.T) {
			want := r.render(es)
			for seed := uint64(1); seed <= 30; seed++ {
				got := r.render(shuffled(es, seed))
				require.Equal(t, want, got, "seed %d: output differs with the input shuffled:\n%s\n--- want ---\n%s", seed, got, want)
			}
		})
	}
	t.Run("IndexTopics", func(t *testing.T) {
		want := RenderIndex(fixtureTopics(), nil)
		for seed := uint64(1); seed <= 10; seed++ {
			got := RenderIndex(shuffled(fixtureTopics(), seed), nil)
			require.Equal(t, want, got, "seed %d: output differs with the topics shuffled", seed)
		}
	})
}

// shownCanonical is what an entry file must give back: the canonical form
// of every active or conflict entry, one per id.
func shownCanonical(es []Entry) []Entry {
	var out []Entry
	for _, e := range es {
		c := Canonical(e)
		if c.Status == StatusActive || c.Status == StatusConflict {
			out = append(out, c)
		}
	}
	return out
}

func sortedByID(es []Entry) []Entry {
	es = slices.Clone(es)
	slices.SortFunc(es, cmpEntry)
	return es
}

func TestRoundTrip(t *testing.T) {
	es := fixtureEntries()
	want := sortedByID(shownCanonical(es))
	for name, b := range map[string][]byte{
		"Global":    RenderGlobal(es),
		"Knowledge": RenderKnowledge("topic", es),
	} {
		t.Run(name, func(t *testing.T) {
			got := sortedByID(parseEntries(t, b))
			require.Len(t, got, len(want), "got %d entries, want %d", len(got), len(want))
			for i := range want {
				assert.True(t, reflect.DeepEqual(got[i], want[i]), "entry %s:\ngot  %#v\nwant %#v", want[i].ID, got[i], want[i])
			}
		})
	}
}

func TestRoundTripTrickyText(t *testing.T) {
	texts := []string{
		"### heading", "## section", "# title", "#", "##", "###\tx", "   ### indented", "\t## tabbed",
		"<!-- mem:x -->", "<!-- compaction:c -->", "<!--", "  <!-- hidden", "<!-- comment -->",
		`\### one`, `\\### two`, `\<!-- mem:y -->`, `\`, `\\`, `\ ### not`, "#### four", "#hashtag",
		"> quote", ">", "*starred*", "*importance 2*", "---", "```\n### in a fence\n```",
		"中文 ### 不是标题", "### 中文标题",
	}
	for _, text := range texts {
		e := Entry{ID: "m-1", Type: "fact", Title: "t", Content: "first\n" + text + "\nlast", Importance: 1}
		starts := Entry{ID: "m-2", Type: "fact", Title: "t", Content: text, Importance: 1}
		for _, x := range []Entry{e, starts} {
			out := RenderGlobal([]Entry{x, {ID: "m-z", Title: "after", Content: "z", Importance: 1}})
			got := parseEntries(t, out)
			require.Len(t, got, 2, "text %q: got %d blocks, want 2:\n%s", text, len(got), out)
			want := Canonical(x)
			assert.True(t, reflect.DeepEqual(got[0], want), "text %q:\ngot  %#v\nwant %#v", text, got[0], want)
		}
	}
}

func TestRoundTripNewBlockWithoutMeta(t *testing.T) {
	// a hand-written block whose first line is emphasis is not a meta line
	doc, err := Parse([]byte("### New\n*really* important\n"))
	require.NoError(t, err)
	e, err := ParseEntry(doc.Blocks[0])
	require.NoError(t, err)
	want := Entry{Title: "New", Content: "*really* important", Importance: DefaultImportance, Status: StatusActive}
	assert.True(t, reflect.DeepEqual(e, want), "got %#v, want %#v", e, want)
}

func TestRenderSkipsHiddenStatuses(t *testing.T) {
	out := string(RenderGlobal(fixtureEntries()))
	for _, hidden := range []string{"Superseded text", "Forgotten text"} {
		assert.NotContains(t, out, hidden, "global.md shows %q", hidden)
	}
	assert.Contains(t, out, "conflict: cg-7", "global.md does not mark the conflict entries")
}

func TestRenderHasNoTimestamps(t *testing.T) {
	for name, b := range map[string][]byte{
		"Global": RenderGlobal(fixtureEntries()),
		"Index":  RenderIndex(fixtureTopics(), fixtureEntries()),
	} {
		got := StripTimestamps(b)
		assert.Equal(t, b, got, "%s: StripTimestamps removed lines, so the file holds timestamps", name)
	}
}

func TestIDEncoding(t *testing.T) {
	for _, id := range []string{"m-3f1a9c2b7d10", "odd id/1", "a-->b", "100%", "%zz", "中文", "a\nb", ":"} {
		got := decodeID(encodeID(id))
		assert.Equal(t, id, got, "decodeID(encodeID(%q)) = %q", id, got)
		enc := encodeID(id)
		assert.False(t, strings.ContainsAny(enc, " \t\n>"), "encodeID(%q) = %q holds a character an anchor cannot", id, enc)
	}
}
