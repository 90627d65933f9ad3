package httpapi

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"dshmem/observer/broker"
	"dshmem/projector"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// layerBody is a context layer without its frame.
func layerBody(layer string) string {
	_, body, _ := strings.Cut(layer, "prefer what the user says now when they disagree.\n\n")
	return strings.TrimSuffix(body, "\n</memory-reference>")
}

// TestContextLayers pins the session-start context's budgets and window
// by what it returns, not by the constants: the stable layer keeps about
// 3,000 characters of a long global.md and notes the cut; the workspace
// summary is memory_summary.md, which the projector keeps within 3,000
// bytes; the dynamic layer holds the newest session
// summary of the workspace from the last 7 days, at most 1,500
// characters, and nothing older.
func TestContextLayers(t *testing.T) {
	now := time.Date(2026, 8, 18, 12, 0, 0, 0, time.UTC)
	clock := now
	ts := startServer(t, t.TempDir(), ServerOptions{Now: func() time.Time { return clock }})
	const cwd = "/home/u/layers"
	for i := range 40 {
		ts.must(200, "POST", "/v1/remember", map[string]any{"global": true, "type": "rule", "title": fmt.Sprintf("全局规则 %d", i),
			"content": strings.Repeat(fmt.Sprintf("规则%d：提交前先运行全部测试并检查格式。", i), 6)}, nil)
		ts.must(200, "POST", "/v1/remember", map[string]any{"cwd": cwd, "type": "fact", "title": fmt.Sprintf("workspace fact %d", i),
			"content": strings.Repeat(fmt.Sprintf("The service %d listens on its own port and logs to journald. ", i), 3)}, nil)
	}
	summary := strings.Repeat("我们把部署流程改成了先迁移再发布。", 200) // 3,400 characters
	ts.must(200, "POST", "/v1/events", []any{
		event("ly:0", "session/start", "ly", cwd, map[string]any{"origin": "top"}),
		withTime(event("ly:1", "compaction/summary", "ly", "", map[string]any{"compactionId": "c-recent", "text": summary}), now.Add(-6*24*time.Hour)),
	}, nil)
	var sc broker.SessionContext
	ts.must(200, "GET", "/v1/context?cwd="+cwd+"&session=ly2", nil, &sc)

	// Stable: global.md is far over 3,000 characters; the layer keeps
	// about that much (index.md adds a little) and says so.
	stable := utf8.RuneCountInString(layerBody(sc.Stable))
	assert.GreaterOrEqual(t, stable, 2900, "stable layer %d characters: cut far below the 3,000 budget", stable)
	assert.LessOrEqual(t, stable, 3000+2000+8, "stable layer %d characters: over the 3,000 + 2,000 budgets", stable)
	assert.Contains(t, strings.Join(sc.Notes, "\n"), "global.md: cut to 3000 characters")
	assert.Contains(t, sc.Stable, "[注：原文", "the cut is not marked")

	// Workspace: the projector bounds memory_summary.md at 3,000 bytes
	// (40 long entries fill it), and the layer is that file.
	sum, err := os.ReadFile(filepath.Join(ts.root, filepath.FromSlash(projector.SummaryPath(sc.Scope))))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(sum), 3000, "memory_summary.md is %d bytes", len(sum))
	assert.GreaterOrEqual(t, len(sum), 2500, "memory_summary.md is %d bytes: 40 long entries do not fill it", len(sum))
	assert.Equal(t, strings.TrimSpace(string(sum)), layerBody(sc.Workspace))

	// Dynamic: the 6-day-old summary, cut to 1,500 characters.
	require.NotEmpty(t, sc.Dynamic, "no dynamic layer for a summary 6 days old: %v", sc.Notes)
	dyn := layerBody(sc.Dynamic)
	assert.Contains(t, dyn, "我们把部署流程改成了先迁移再发布。")
	_, text, _ := strings.Cut(dyn, "):\n")
	cut, _, _ := strings.Cut(text, "[注：原文")
	n := utf8.RuneCountInString(strings.TrimSpace(cut))
	assert.LessOrEqual(t, n, 1500, "dynamic layer %d characters, over 1,500", n)
	assert.GreaterOrEqual(t, n, 1400, "dynamic layer %d characters: cut far below 1,500", n)

	// Eight days later the summary is out of the window: no dynamic layer.
	clock = now.Add(2*24*time.Hour + time.Hour)
	ts.must(200, "GET", "/v1/context?cwd="+cwd+"&session=ly3", nil, &sc)
	assert.Empty(t, sc.Dynamic, "a summary 8 days old is still the dynamic layer")
}

// withTime sets an event's time.
func withTime(ev map[string]any, t time.Time) map[string]any {
	ev["time"] = t.UTC().Format(time.RFC3339)
	return ev
}

// TestContextWithoutEntries: a workspace whose session events were folded
// before it learned anything has a memory_summary.md of its header only;
// its context carries no workspace layer (the system prompt would hold an
// empty frame, and change again at the first entry). The layer comes with
// the first entry and goes when the last one is forgotten.
func TestContextWithoutEntries(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	const cwd = "/home/u/fresh"
	ts.must(200, "POST", "/v1/events", []any{
		event("fr:0", "session/start", "fr", cwd, map[string]any{"origin": "top"}),
		event("fr:1", "user/message", "fr", "", map[string]any{"text": "hello, nothing to learn here"}),
	}, nil)
	var sc broker.SessionContext
	ts.must(200, "GET", "/v1/context?cwd="+cwd+"&session=fr2", nil, &sc)
	// The case is the one meant only if the header-only file is there.
	sum, err := os.ReadFile(filepath.Join(ts.root, filepath.FromSlash(projector.SummaryPath(sc.Scope))))
	require.NoError(t, err, "the workspace's summary was not written; the test no longer reaches its case")
	require.Contains(t, string(sum), "# Workspace memory")
	assert.Empty(t, sc.Workspace, "a summary with no entries is served")
	assert.NotContains(t, sc.Section, "memory-reference", "the section holds a frame with nothing in it")
	assert.Contains(t, strings.Join(sc.Notes, "\n"), "shows no entries")

	var en struct{ ID string }
	ts.must(200, "POST", "/v1/remember", map[string]any{"cwd": cwd, "content": "the fresh project builds with bazel"}, &en)
	ts.must(200, "GET", "/v1/context?cwd="+cwd+"&session=fr3", nil, &sc)
	assert.Contains(t, sc.Workspace, "builds with bazel")
	assert.Contains(t, sc.Section, "builds with bazel")

	ts.must(200, "POST", "/v1/forget", map[string]any{"id": en.ID, "reason": "test"}, nil)
	ts.must(200, "GET", "/v1/context?cwd="+cwd+"&session=fr4", nil, &sc)
	assert.Empty(t, sc.Workspace, "the workspace layer outlived its last entry")
	assert.NotContains(t, sc.Section, "memory-reference")
}
