package markdown

import "testing"

func TestGolden(t *testing.T) {
	es := fixtureEntries()
	tests := []struct {
		name string
		got  []byte
	}{
		{"global.md", RenderGlobal(es)},
		{"global-empty.md", RenderGlobal(nil)},
		{"index.md", RenderIndex(fixtureTopics(), es[:6])},
		{"knowledge-go-tooling.md", RenderKnowledge("Go tooling", es[6:10])},
		{"memory_summary.md", RenderSummary(SummaryInput{ScopeKey: "ws-3f1a9c2b7d10aa00bb11", Cwd: "/home/u/proj", Entries: es})},
		{"memory_summary-cut.md", RenderSummary(SummaryInput{ScopeKey: "ws-3f1a9c2b7d10aa00bb11", Cwd: "/home/u/proj", Entries: es, MaxBytes: 900})},
		{"session-2026-08-18.md", RenderSessionDay("2026-08-18", fixtureSessions())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { golden(t, tt.name, tt.got) })
	}
}
