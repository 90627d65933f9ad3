package projector

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"dshmem/events"
	"dshmem/markdown"
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
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := loadScope(ctx, st.Reader(), stream)
	if err != nil {
		t.Fatal(err)
	}
	in := markdown.SummaryInput{ScopeKey: stream}
	for _, e := range all {
		if shown(e.md.Status) {
			in.Entries = append(in.Entries, e.md)
		}
	}
	if len(in.Entries) != 700 {
		t.Fatalf("got %d shown entries, want 700", len(in.Entries))
	}
	want := markdown.RenderSummary(in)
	if !bytes.Equal(got.Data, want) {
		t.Fatalf("summary from the top of the ranking differs from the full render:\ngot:\n%s\nwant:\n%s", got.Data, want)
	}
	if !bytes.Contains(got.Data, []byte("more entries not shown")) {
		t.Fatalf("a 700-entry summary should say how many were left out:\n%s", got.Data)
	}
}
