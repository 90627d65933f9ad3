package projector

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dshmem/events"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const filesWS = "ws-0123456789abcdef0123"

func filesProjector(t *testing.T) (*Projector, string) {
	t.Helper()
	root := t.TempDir()
	p := New(openStore(t))
	p.Root = root
	return p, root
}

func rememberEv(stream string, seq uint64, content, typ string, tags ...string) events.Envelope {
	d := map[string]any{"content": content, "type": typ}
	if tags != nil {
		d["tags"] = tags
	}
	return ev(stream, seq, events.TypeMemoryRemember, "", d)
}

func fileAt(t *testing.T, root, rel string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if os.IsNotExist(err) {
		return "", false
	}
	require.NoError(t, err)
	return string(b), true
}

func TestParsePath(t *testing.T) {
	for in, want := range map[string]PathInfo{
		"global.md":                 {Kind: KindGlobal, Scope: "global"},
		"index.md":                  {Kind: KindIndex, Scope: "global"},
		"knowledge/go-tooling.md":   {Kind: KindKnowledge, Scope: "global"},
		"sessions/2026-08-18.md":    {Kind: KindDay, Day: "2026-08-18"},
		SummaryPath(filesWS):        {Kind: KindSummary, Scope: filesWS},
		ScopePath(filesWS):          {Kind: KindScope, Scope: filesWS},
		HistoryPath(filesWS, 42):    {Kind: KindHistory, Scope: filesWS, Seq: 42},
		"knowledge/Go.md":           {},
		"knowledge/a/b.md":          {},
		"sessions/2026-8-18.md":     {},
		"scopes/global/scope.json":  {},
		"scopes/ws-x/scope.json":    {},
		"log/global/x.jsonl.zst":    {},
		"global.md.damaged":         {},
		HistoryPath(filesWS, 0):     {},
		"../global.md":              {},
		"sessions/2026-08-18.md/x":  {},
		"knowledge/topic-1a2b.md":   {Kind: KindKnowledge, Scope: "global"},
		"sessions/../global.md":     {},
		"scopes/" + filesWS + "/x":  {},
		"index.md/":                 {},
		"knowledge/.hidden.md":      {},
		"knowledge/-x.md":           {},
		"sessions/2026-08-18.md.md": {},
	} {
		got, ok := ParsePath(in)
		assert.False(t, got != want || ok != (want.Kind != KindNone), "%q: got %+v %v, want %+v", in, got, ok, want)
	}
}

func TestFilesPlacement(t *testing.T) {
	p, root := filesProjector(t)
	mustFold(t, p, []events.Envelope{
		rememberEv("global", 1, "Prefer tabs.", "preference", "style"),
		rememberEv("global", 2, "Port 5433.", "fact", "Database"),
		rememberEv("global", 3, "Port 5434 for the replica.", "fact", "database"),
		rememberEv("global", 4, "Run make check.", "procedure"),
	})
	g, _ := fileAt(t, root, GlobalFile)
	db, _ := fileAt(t, root, "knowledge/database.md")
	pr, _ := fileAt(t, root, "knowledge/procedure.md")
	idx, _ := fileAt(t, root, IndexFile)
	assert.False(t, !strings.Contains(g, "Prefer tabs.") || strings.Contains(g, "Port"), "global.md:\n%s", g)
	// "Database" and "database" give one file, titled by the least name.
	assert.False(t, !strings.HasPrefix(db, "# Database\n") || !strings.Contains(db, "5433") || !strings.Contains(db, "5434"), "knowledge/database.md:\n%s", db)
	assert.False(t, !strings.Contains(pr, "make check") || !strings.Contains(idx, "[Database](knowledge/database.md)"), "procedure.md:\n%s\nindex.md:\n%s", pr, idx)
	files, err := p.Files(context.Background())
	require.NoError(t, err)
	for _, f := range files {
		b, _ := fileAt(t, root, f.Path)
		assert.False(t, SHA256([]byte(b)) != f.SHA256 || f.Stream != "global" || f.Seq != 4, "files row %+v does not match the file", f)
		assert.Equal(t, (f.Path != IndexFile), (f.Text != ""), "%s: text kept %v", f.Path, f.Text != "")
	}
	t.Run("TopicEmptiedIsRemoved", func(t *testing.T) {
		mustFold(t, p, []events.Envelope{ev("global", 5, events.TypeMemoryForget, "", map[string]any{"entryId": EntryID("global", 4, 0)})})
		_, ok := fileAt(t, root, "knowledge/procedure.md")
		assert.False(t, ok, "knowledge/procedure.md is still there")
		files, err := p.Files(context.Background())
		require.NoError(t, err)
		for _, f := range files {
			assert.NotEqualValues(t, "knowledge/procedure.md", f.Path, "its files row is still there")
		}
	})
}

func TestFilesHeld(t *testing.T) {
	p, root := filesProjector(t)
	var held []string
	p.Held = func(rel string) { held = append(held, rel) }
	mustFold(t, p, []events.Envelope{rememberEv("global", 1, "Prefer tabs.", "preference")})
	path := filepath.Join(root, GlobalFile)
	edited := "# Global memory\n\nmy own words\n"
	os.WriteFile(path, []byte(edited), 0o644)
	mustFold(t, p, []events.Envelope{rememberEv("global", 2, "Prefer short names.", "preference")})
	got, _ := fileAt(t, root, GlobalFile)
	require.Equal(t, edited, got, "held %v; global.md:\n%s", held, got)
	require.True(t, slices.Equal(held, []string{GlobalFile}), "held %v; global.md:\n%s", held, got)
	require.NoError(t, p.Rewrite(context.Background(), map[string]string{GlobalFile: "not the bytes on disk"}))
	if got, _ := fileAt(t, root, GlobalFile); got != edited {
		t.Fatal("Rewrite replaced bytes it was not told about")
	}
	require.NoError(t, p.Rewrite(context.Background(), map[string]string{GlobalFile: SHA256([]byte(edited))}))
	if got, _ := fileAt(t, root, GlobalFile); !strings.Contains(got, "Prefer short names.") {
		t.Fatalf("Rewrite did not render the file:\n%s", got)
	}
}

func TestFilesRepeatedCompaction(t *testing.T) {
	p, root := filesProjector(t)
	c := func(seq uint64, id, text string) events.Envelope {
		return ev(filesWS, seq, events.TypeCompactionSummary, "s", map[string]any{"compactionId": id, "text": text})
	}
	mustFold(t, p, []events.Envelope{c(1, "c-1", "first"), c(2, "c-2", "second")})
	day := DayPath("2026-08-18")
	before, ok := fileAt(t, root, day)
	require.True(t, ok, "day file:\n%s", before)
	require.EqualValues(t, 2, strings.Count(before, "<!-- compaction:"), "day file:\n%s", before)
	mustFold(t, p, []events.Envelope{c(3, "c-1", "first, sent again")})
	after, _ := fileAt(t, root, day)
	assert.Equal(t, before, after, "a repeated compactionId changed the file:\n%s", after)
}

// Which summary versions exist does not depend on how the stream was
// split into folds.
func TestFilesHistoryChunking(t *testing.T) {
	var evs []events.Envelope
	evs = append(evs, withCwd(ev(filesWS, 1, events.TypeSessionStart, "s", nil), "/home/u/p"))
	for i := uint64(2); i <= 26; i++ {
		evs = append(evs, rememberEv(filesWS, i, "fact "+strconv.Itoa(int(i)), "fact"))
		if i%5 == 0 {
			evs = append(evs, ev(filesWS, i+1, events.TypeUserMessage, "s", map[string]any{"text": "hi"}))
			i++
		}
	}
	trees := map[string]map[string]string{}
	for _, split := range []int{1, 4, len(evs)} {
		p, root := filesProjector(t)
		for i := 0; i < len(evs); i += split {
			mustFold(t, p, evs[i:min(i+split, len(evs))])
		}
		tree := map[string]string{}
		filepath.WalkDir(filepath.Join(root, ScopesDir), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(path)
				rel, _ := filepath.Rel(root, path)
				tree[filepath.ToSlash(rel)] = string(b)
			}
			return nil
		})
		trees[strconv.Itoa(split)] = tree
	}
	want := trees[strconv.Itoa(len(evs))]
	n := 0
	for p := range want {
		if strings.Contains(p, HistoryDir) {
			n++
		}
	}
	assert.Equal(t, HistoryKeep, n, "got %d history files, want %d", n, HistoryKeep)
	for split, tree := range trees {
		assert.Len(t, tree, len(want), "split %s: got %d files, want %d", split, len(tree), len(want))
		for p, b := range want {
			assert.Equal(t, b, tree[p], "split %s: %s differs", split, p)
		}
	}
}

func TestIsWorkspaceIsThePattern(t *testing.T) {
	re := regexp.MustCompile(`^ws-[0-9a-f]{20}$`)
	for _, s := range []string{"ws-0123456789abcdef0123", "ws-0123456789abcdef012", "ws-0123456789abcdef01234",
		"ws-0123456789ABCDEF0123", "wx-0123456789abcdef0123", "ws-0123456789abcdeg0123", "global", "", "ws-",
		"ws-0123456789abcdef012\n", "ws-ffffffffffffffffffff", "ws-00000000000000000000"} {
		assert.Equal(t, re.MatchString(s), IsWorkspace(s), "IsWorkspace(%q)", s)
	}
}
