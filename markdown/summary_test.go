package markdown

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummaryFitsBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	pieces := []string{"a", "pnpm", "中文", "日本語", "🙂", "### h", "<!-- mem:x -->", "\n", "\n\n", " ", "é", "\\", "*", "> q", "·", ","}
	text := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for i := range 400 {
		n := r.IntN(40)
		es := make([]Entry, n)
		for j := range es {
			es[j] = Entry{
				ID: fmt.Sprintf("m-%d", r.IntN(50)), Type: typeOrder[r.IntN(len(typeOrder))],
				Title: text(r.IntN(80)), Description: text(r.IntN(20)), Content: text(r.IntN(400)),
				Tags: []string{text(3)}, Importance: r.IntN(5) - 1,
				Status: []string{"active", "conflict", "", "superseded"}[r.IntN(4)], ConflictGroup: text(2),
			}
		}
		in := SummaryInput{ScopeKey: "ws-" + text(3), Cwd: text(r.IntN(300)), Entries: es, MaxBytes: []int{0, 1, 50, 300, 1000, 3000}[r.IntN(6)]}
		out := RenderSummary(in)
		limit := in.MaxBytes
		if limit <= 0 {
			limit = DefaultSummaryBytes
		}
		require.False(t, len(out) > limit, "case %d: %d bytes, limit %d", i, len(out), limit)
		require.True(t, utf8.Valid(out), "case %d: not valid UTF-8", i)
	}
}

func TestSummaryDropsLowestRanked(t *testing.T) {
	var es []Entry
	for i := range 30 {
		es = append(es, Entry{ID: fmt.Sprintf("m-%02d", i), Type: "fact", Title: fmt.Sprintf("entry %02d", i),
			Content: strings.Repeat("x", 100), Importance: i % 4})
	}
	es = append(es, Entry{ID: "m-conflict", Type: "rule", Title: "in conflict", Content: "c", Importance: 3, Status: "conflict", ConflictGroup: "g"})
	full := RenderSummary(SummaryInput{Entries: es, MaxBytes: 1 << 20})
	require.NotContains(t, string(full), "not shown", "a summary with room for everything says something was dropped")
	assert.Contains(t, string(full), "conflict: g", "the conflict entry is not marked")
	out := RenderSummary(SummaryInput{Entries: es, MaxBytes: 1500})
	doc, err := Parse(out)
	require.NoError(t, err)
	kept := len(doc.Blocks)
	require.NotEqualValues(t, 0, kept, "kept %d blocks of %d, want some but not all", kept, len(es))
	require.NotEqual(t, len(es), kept, "kept %d blocks of %d, want some but not all", kept, len(es))
	wantNote := fmt.Sprintf("*%d more entries not shown.*\n", len(es)-kept)
	assert.True(t, strings.HasSuffix(string(out), wantNote), "summary ends %q, want the note %q", out[len(out)-60:], wantNote)
	minKept := 3
	for _, b := range doc.Blocks {
		e, err := ParseEntry(b)
		require.NoError(t, err)
		assert.NotEqual(t, StatusConflict, e.Status, "a conflict entry was kept while active ones were dropped")
		minKept = min(minKept, e.Importance)
	}
	// every dropped active entry ranks at most as high as the lowest kept one
	for _, e := range es {
		if e.Status == "" && e.Importance > minKept && !strings.Contains(string(out), e.ID) {
			t.Errorf("%s (importance %d) was dropped while importance %d was kept", e.ID, e.Importance, minKept)
		}
	}
}

func TestSummaryTinyBudget(t *testing.T) {
	out := RenderSummary(SummaryInput{Cwd: "/项目/路径", Entries: fixtureEntries(), MaxBytes: 17})
	assert.False(t, len(out) > 17 || !utf8.Valid(out), "got %q (%d bytes), want at most 17 bytes of UTF-8", out, len(out))
}
