package markdown

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/markdown")

const goldenDir = "../testdata/markdown"

// golden compares got with testdata/markdown/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if *update {
		require.NoError(t, os.MkdirAll(goldenDir, 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "read golden file (run go test ./markdown -run Golden -update to create it)")
	assert.Equal(t, want, got, "%s differs from the golden file:\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
}

// fixtureEntries is the scripted set every renderer is tested over.
func fixtureEntries() []Entry {
	return []Entry{
		{ID: "m-3f1a9c2b7d10", Type: "preference", Title: "Use pnpm, not npm",
			Description: "Package manager for Node projects.", Content: "Install dependencies with pnpm; never npm.",
			Tags: []string{"node", "tooling"}, Terms: []string{"pnpm", "npm"}, Importance: 2, Status: "active"},
		{ID: "m-0a0b0c0d0e0f", Type: "preference", Title: "回答用中文",
			Description: "用户偏好中文回复。", Content: "所有解释都用简体中文，代码注释保持英文。\n\n术语第一次出现时附英文原文。",
			Tags: []string{"语言", "沟通"}, Importance: 3},
		{ID: "m-1111aaaa2222", Type: "rule", Title: "Never push to main",
			Content: "Open a pull request.\n### This line looks like a heading\n<!-- mem:x -->\nand <!-- comments --> inline stay as they are.",
			Tags:    []string{"git"}, Importance: 3, Status: "active"},
		{ID: "m-2222bbbb3333", Type: "decision", Title: "Store logs as zstd JSONL",
			Description: "Chosen over SQLite WAL.\n\nSecond paragraph of the description.",
			Content:     "> quoted first line, not a description\n\\### already escaped by hand\n#### level four heading is text\n    indented code",
			Importance:  2},
		{ID: "m-4444cccc5555", Type: "decision", Title: "Tabs or spaces",
			Content: "Use tabs.", Importance: 1, Status: "conflict", ConflictGroup: "cg-7"},
		{ID: "m-5555dddd6666", Type: "decision", Title: "Tabs or spaces",
			Content: "Use spaces.", Importance: 1, Status: "conflict", ConflictGroup: "cg-7"},
		{ID: "m-6666eeee7777", Type: "architecture", Title: "One writer per root",
			Content: "An OS file lock keeps a second writer out.\r\nWindows line ends are normalized.   ", Importance: 2},
		{ID: "m-7777ffff8888", Type: "procedure", Title: "Release",
			Content: "1. tag\n2. build\n3. upload", Tags: []string{"release", " release ", "a,b·c"}, Importance: 1},
		{ID: "m-8888aaaa9999", Type: "fix", Title: "modernc sqlite busy timeout",
			Content: "Set _pragma=busy_timeout(5000) in the DSN.", Terms: []string{"SQLITE_BUSY"}, Importance: 2},
		{ID: "m-9999bbbb0000", Type: "fact", Title: "项目代号 dshmem",
			Content: "dshmem 是 DSH 的长期记忆引擎。", Importance: 0},
		{ID: "m-aaaa00001111", Type: "fact", Title: "Old fact", Content: "Superseded text.", Importance: 2, Status: "superseded"},
		{ID: "m-bbbb11112222", Type: "fact", Title: "Forgotten", Content: "Forgotten text.", Importance: 2, Status: "forgotten"},
		{ID: "m-cccc22223333", Type: "glossary", Title: "Unknown type", Content: "Goes after the known types.", Importance: 1},
		{ID: "m-dddd33334444", Title: "No type", Content: "Goes last.", Importance: 1},
		{ID: "odd id/1", Type: "Fact", Title: "  Odd\nid  ", Content: "The anchor percent-encodes the id.", Importance: 7},
	}
}

func fixtureTopics() []Topic {
	return []Topic{
		{Name: "Go tooling", File: "knowledge/go-tooling.md", Titles: []string{"gofmt on save", "go vet in CI"}},
		{Name: "数据库", Titles: []string{"SQLite WAL", "FTS5 bigrams"}},
		{Name: "Node", File: "knowledge/node.md", Titles: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}},
	}
}

func fixtureSessions() []SessionBlock {
	return []SessionBlock{
		{Kind: "compaction", ID: "cmp-1", Time: "2026-08-18T10:00:00.123Z", Stream: "ws-3f1a9c2b7d10aa00bb11", Session: "session-1",
			Text: "Worked on the markdown package.\n### Next steps\n<!-- compaction:cmp-2 -->"},
		{Kind: "session", ID: "session-1", Time: "2026-08-18T11:30:00Z", Stream: "ws-3f1a9c2b7d10aa00bb11", Session: "session-1",
			Text: "会话总结：完成了渲染器和解析器。"},
		{Kind: "compaction", ID: "cmp-1", Time: "2026-08-18T12:00:00Z", Stream: "global", Session: "session-2", Text: "A repeat: dropped."},
		{Kind: "compaction", ID: "cmp-3", Time: "2026-08-18T13:00:00Z", Stream: "global", Text: ""},
	}
}

// shuffled returns a copy of in in a random order drawn from a fixed seed.
func shuffled[T any](in []T, seed uint64) []T {
	out := slices.Clone(in)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// parseEntries parses b and reads every block as an entry.
func parseEntries(t *testing.T, b []byte) []Entry {
	t.Helper()
	doc, err := Parse(b)
	require.NoError(t, err, "Parse")
	var out []Entry
	for _, blk := range doc.Blocks {
		e, err := ParseEntry(blk)
		require.NoError(t, err, "ParseEntry: %v\n%s", err, blk.Raw)
		out = append(out, e)
	}
	return out
}
