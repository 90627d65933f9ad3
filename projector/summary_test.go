package projector

import (
	"context"
	"fmt"
	"testing"

	"dshmem/events"
	"dshmem/markdown"

	"github.com/stretchr/testify/require"
)

// TestSummaryReadsTopOfRanking checks that a summary built from the top
// of the ranking (what renderSummary reads) equals one rendered from
// every entry of a large workspace, including the "more entries" line.
func TestSummaryReadsTopOfRanking(t *testing.T) {
	st := openStore(t)
	p := New(st)
	const stream = "ws-0123456789abcdef0123"
	types := []string{"fact", "rule", "preference", "procedure", "decision", "fix", "architecture"}
	var evs []events.Envelope
	for i := 1; i <= 700; i++ {
		evs = append(evs, ev(stream, uint64(i), "memory/remember", "", map[string]any{
			"content":    fmt.Sprintf("entry %d says something about the build", i),
			"type":       types[i%len(types)],
			"importance": i % 4,
		}))
	}
	mustFold(t, p, evs)
	ctx := context.Background()
	got, err := renderSummary(ctx, st.Reader(), stream)
	require.NoError(t, err)
	all, _, err := loadScope(ctx, st.Reader(), stream)
	require.NoError(t, err)
	in := markdown.SummaryInput{ScopeKey: stream}
	for _, e := range all {
		if shown(e.md.Status) {
			in.Entries = append(in.Entries, e.md)
		}
	}
	require.Len(t, in.Entries, 700, "got %d shown entries, want 700", len(in.Entries))
	want := markdown.RenderSummary(in)
	require.Equal(t, want, got.Data, "summary from the top of the ranking differs from the full render:\ngot:\n%s\nwant:\n%s", got.Data, want)
	require.Contains(t, string(got.Data), string([]byte("more entries not shown")), "a 700-entry summary should say how many were left out:\n%s", got.Data)
}
