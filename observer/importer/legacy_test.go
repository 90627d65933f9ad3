package importer

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	legacyMDTree = "../../testdata/legacy/dsh-memory"
	legacyWSTree = "../../testdata/legacy/dsh-workspace-memory"
	wsProj       = "ws-9c09f8055a26c27736dd" // StreamForCwd("/home/u/proj")
	wsNotes      = "ws-33030342aa31362e7b56" // StreamForCwd("/home/u/notes")
)

func TestParseLegacyMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string // "heading|text"
	}{
		{"BulletsUnderHeadings", "# T\n## A\n- one\n- two\n## B\n* three\n",
			[]string{"A|one", "A|two", "B|three"}},
		{"ContinuationAndNested", "## H\n- first line\n  second line\n    - nested\n- next\n",
			[]string{"H|first line\nsecond line\n  - nested", "H|next"}},
		{"LazyContinuation", "- a\nb\n", []string{"|a\nb"}},
		{"BlankEndsItemUnlessIndented", "- a\n\n  more\n\npara\n", []string{"|a\n\nmore", "|para"}},
		{"Paragraphs", "## P\nline one\nline two\n\nsecond para\n", []string{"P|line one\nline two", "P|second para"}},
		{"Checkbox", "- [x] done thing\n- [ ] open thing\n", []string{"|done thing", "|open thing"}},
		{"Numbered", "## How to\n1. dump\n2) restore\n", []string{"How to|dump", "How to|restore"}},
		{"FrontMatterAndComments", "---\na: b\n---\n<!-- c -->\n- x\n", []string{"|x"}},
		{"FenceStaysWithItsBlock", "- run\n  ```\n  # not a heading\n  ```\n", []string{"|run\n```\n# not a heading\n```"}},
		{"FenceAfterBlankLine", "- run\n\n```\nx\n```\n", []string{"|run\n\n```\nx\n```"}},
		{"ThematicBreak", "- a\n---\n- b\n", []string{"|a", "|b"}},
		{"CRLF", "## H\r\n- a\r\n", []string{"H|a"}},
		{"Empty", "# only a title\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, b := range parseLegacyMarkdown([]byte(tc.in)) {
				got = append(got, nearestHeading(b.headings)+"|"+b.text)
			}
			require.True(t, reflect.DeepEqual(got, tc.want), "got %q, want %q", got, tc.want)
		})
	}
}

func TestSessionSections(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"SplitAtH2", "# 2026-03-01\n\n## a\nx\n\n## b\ny\n", []string{"## a\nx", "## b\ny"}},
		{"Preamble", "# day\nintro\n## a\nx\n", []string{"intro", "## a\nx"}},
		{"NoHeadings", "just text\nmore\n", []string{"just text\nmore"}},
		{"ShallowestLevel", "### a\nx\n#### sub\ny\n### b\n", []string{"### a\nx\n#### sub\ny", "### b"}},
		{"HeadingInFence", "## a\n```\n## not\n```\n", []string{"## a\n```\n## not\n```"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sessionSections([]byte(tc.in))
			require.True(t, reflect.DeepEqual(got, tc.want), "got %q, want %q", got, tc.want)
		})
	}
}

func TestEntryTime(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"2026-01-05T08:00:00Z"`, "2026-01-05T08:00:00.000Z"},
		{`"2026-01-06T12:00:00+08:00"`, "2026-01-06T04:00:00.000Z"},
		{`1767600000000`, "2026-01-05T08:00:00.000Z"},
		{`"1767600000000"`, "2026-01-05T08:00:00.000Z"},
		{`1767600000`, "2026-01-05T08:00:00.000Z"},
		{`"2026-02-01"`, "2026-02-01T00:00:00.000Z"},
		{`"yesterday"`, ""},
		{`null`, ""},
		{`-5`, ""},
	} {
		got, ok := entryTime(json.RawMessage(tc.in))
		assert.False(t, got != tc.want || ok != (tc.want != ""), "entryTime(%s): got %q %v, want %q", tc.in, got, ok, tc.want)
	}
}

// factsByContent maps the data of the tree's memory/remember events by
// content.
func factsByContent(t *testing.T, tree LegacyTree) map[string]payload.Remember {
	t.Helper()
	out := map[string]payload.Remember{}
	for _, f := range tree.Files {
		require.Nil(t, f.Err, "%s: %v", f.Path, f.Err)
		for _, ev := range f.Events {
			if ev.Type != events.TypeMemoryRemember {
				continue
			}
			var d payload.Remember
			require.NoError(t, payload.Unmarshal(ev.Data, &d))
			out[d.Content] = d
		}
	}
	return out
}

func TestReadLegacyMarkdownTree(t *testing.T) {
	tree, err := ReadLegacy(legacyMDTree)
	require.NoError(t, err)
	require.True(t, reflect.DeepEqual(tree.Layouts, []string{LegacyDSHMemory}), "got layouts %v", tree.Layouts)
	assert.False(t, len(tree.Notes) != 1 || !strings.Contains(tree.Notes[0], "README.txt"), "got notes %q, want README.txt named as not read", tree.Notes)
	facts := factsByContent(t, tree)
	for _, tc := range []struct {
		prefix, typ string
		tags        []string
		title       string
	}{
		{"Answer in Chinese", "preference", []string{"Preferences"}, ""},
		{"**Editor**", "preference", []string{"Preferences"}, "Editor"},
		{"Never run `go mod tidy`", "rule", []string{"Rules"}, ""},
		{"Ask before deleting", "rule", []string{"Rules"}, ""},
		{"The user's machine", "fact", []string{"Notes"}, ""},
		{"The team's CI", "fact", []string{"Stable facts"}, ""},
		{"2026-02-10: moved from MySQL", "decision", []string{"postgres", "Decisions"}, ""},
		{"`SERIAL` columns drift", "fix", []string{"postgres", "Pitfalls"}, ""},
		{"Take a dump", "procedure", []string{"postgres", "How to"}, ""},
		{"Wrap errors", "rule", []string{"go-style", "Conventions"}, ""},
		{"The log is the only", "architecture", []string{"project:dshmem", "Architecture"}, ""},
		{"Use `rg -n", "fact", []string{"tool:ripgrep", "ripgrep"}, ""},
	} {
		var got *payload.Remember
		for c, f := range facts {
			if strings.HasPrefix(c, tc.prefix) {
				f := f
				got = &f
			}
		}
		if !assert.NotNil(t, got, "no fact starting %q", tc.prefix) {
			continue
		}
		assert.False(t, got.Type != tc.typ || !reflect.DeepEqual(got.Tags, tc.tags) || got.Title != tc.title, "%q: got type %s tags %q title %q, want %s %q %q", tc.prefix, got.Type, got.Tags, got.Title, tc.typ, tc.tags, tc.title)
	}
	n := len(facts)
	assert.EqualValues(t, 17, n, "got %d facts, want 17: %q", n, legacyKeys(facts))
	for c := range facts {
		assert.NotContains(t, c, "](knowledge/", "index link imported as a fact: %q", c)
	}
	var sessions []string
	for _, f := range tree.Files {
		assert.False(t, f.Path == "index.md" && f.Skipped["index link"] != 4, "index.md: got skipped %v, want 4 index links", f.Skipped)
		for _, ev := range f.Events {
			if ev.Type == events.TypeCompactionSummary {
				var d payload.CompactionSummary
				require.NoError(t, payload.Unmarshal(ev.Data, &d))
				assert.Equal(t, f.Path, d.LegacySource, "%s: got legacySource %q", ev.ID, d.LegacySource)
				sessions = append(sessions, ev.Time+" "+d.CompactionID+" "+headLine(d.Text))
			}
			assert.Equal(t, observer.GlobalStream, ev.Stream, "%s: got stream %s, want global", ev.ID, ev.Stream)
		}
	}
	want := []string{
		"2026-03-01T00:00:00.000Z legacy:sessions/2026-03-01.md:0 ## 10:42 dshmem · compaction",
		"2026-03-01T00:00:01.000Z legacy:sessions/2026-03-01.md:1 ## 16:05 dshmem · session end",
		"2026-03-02T00:00:00.000Z legacy:sessions/2026-03-02.md:0 Summary of the day: repaired a torn tail by hand from the host's own",
	}
	assert.True(t, reflect.DeepEqual(sessions, want), "got sessions\n%q\nwant\n%q", sessions, want)
}

func legacyKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func headLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func TestReadLegacyTimes(t *testing.T) {
	tree, err := ReadLegacy(legacyMDTree)
	require.NoError(t, err)
	byPrefix := map[string]string{}
	for _, f := range tree.Files {
		for _, ev := range f.Events {
			var d struct{ Content string }
			json.Unmarshal(ev.Data, &d)
			byPrefix[headLine(d.Content)] = ev.Time
		}
	}
	for prefix, want := range map[string]string{
		"2026-02-10: moved from MySQL 8 to PostgreSQL 16 for JSONB and better FTS.": "2026-02-10T00:00:00.000Z", // its own date
		"Connection pooling goes through pgbouncer in transaction mode.":            "2026-02-10T00:00:00.000Z", // the file's first date
		"Answer in Chinese unless the user writes in English.":                      "1970-01-01T00:00:00.000Z", // no date at all
	} {
		got := byPrefix[prefix]
		assert.Equal(t, want, got, "%q: got time %q, want %q", prefix, got, want)
	}
}

// entryRow is an entries row, looked up by the legacy event that made it.
type entryRow struct {
	Scope, Status, Type, Title string
	Tags                       []string
	Importance                 int
}

func entryByEvent(t *testing.T, e *observer.Engine, eventID string) (entryRow, bool) {
	t.Helper()
	en, ok, err := e.Store().EntryAddedBy(context.Background(), eventID)
	require.NoError(t, err)
	if !ok {
		return entryRow{}, false
	}
	return entryRow{Scope: en.Scope, Status: en.Status, Type: en.Type, Title: en.Title, Tags: en.Tags, Importance: en.Importance}, true
}

// logBytes reads every file under the root's log directory.
func logBytes(t *testing.T, e *observer.Engine) map[string]string {
	t.Helper()
	out := map[string]string{}
	dir := filepath.Join(e.Root(), observer.LogDir)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	require.NoError(t, err)
	return out
}

func TestImportLegacy(t *testing.T) {
	ctx := context.Background()
	e := openImportEngine(t)
	var first []Report
	for _, root := range []string{legacyMDTree, legacyWSTree} {
		rep, err := ImportLegacy(ctx, e, root, Options{})
		require.NoError(t, err, "import %s", root)
		checkFirstImport(t, rep)
		first = append(first, rep)
	}
	t.Run("ReimportChangesNothing", func(t *testing.T) {
		before := logBytes(t, e)
		for i, root := range []string{legacyMDTree, legacyWSTree} {
			rep, err := ImportLegacy(ctx, e, root, Options{})
			require.NoError(t, err)
			checkReimport(t, rep, first[i].Total.Events)
		}
		after := logBytes(t, e)
		require.True(t, reflect.DeepEqual(before, after), "log changed on re-import: %d files before, %d after", len(before), len(after))
		require.NotEqualValues(t, 0, len(before), "no log files: the comparison proves nothing")
	})
	t.Run("StatusesAndStreams", func(t *testing.T) {
		global := "global/memory_entries.json"
		proj := "scopes/" + wsProj + "/memory_entries.json"
		notes := "scopes/" + wsNotes + "/memory_entries.json"
		for _, tc := range []struct {
			file, id string
			want     entryRow
		}{
			{global, "g-001", entryRow{Scope: "global", Status: "active", Type: "preference", Title: "Reply language", Tags: []string{"language", "style"}, Importance: 3}},
			{global, "g-002", entryRow{Scope: "global", Status: "active", Type: "rule", Title: "No force push", Tags: []string{"git", "workflow"}, Importance: 2}},
			{global, "g-003", entryRow{Scope: "global", Status: "active", Type: "fact", Title: "An entry without times, of a type this engine does not know.", Tags: []string{}, Importance: 1}},
			{proj, "w-101", entryRow{Scope: wsProj, Status: "forgotten", Type: "decision", Title: "Database: MySQL", Tags: []string{"database"}, Importance: 2}},
			{proj, "w-102", entryRow{Scope: wsProj, Status: "active", Type: "decision", Title: "Database: PostgreSQL 16", Tags: []string{"database"}, Importance: 3}},
			{proj, "w-103", entryRow{Scope: wsProj, Status: "active", Type: "fact", Title: "Test runner: make test", Tags: []string{"conflict:cg-7"}, Importance: 1}},
			{proj, "w-104", entryRow{Scope: wsProj, Status: "active", Type: "fact", Title: "Test runner: go test", Tags: []string{"conflict:cg-7"}, Importance: 1}},
			{proj, "w-105", entryRow{Scope: wsProj, Status: "forgotten", Type: "fact", Title: "The staging server is staging-old.internal.", Tags: []string{}, Importance: 1}},
			{notes, "n-1", entryRow{Scope: wsNotes, Status: "active", Type: "procedure", Title: "Publishing notes", Tags: []string{"publish"}, Importance: 1}},
		} {
			got, ok := entryByEvent(t, e, legacyID(tc.file, tc.id))
			if !assert.True(t, ok, "%s: no entry", tc.id) {
				continue
			}
			assert.True(t, reflect.DeepEqual(got, tc.want), "%s: got %+v, want %+v", tc.id, got, tc.want)
		}
		active, err := e.Entries(ctx, observer.EntryFilter{Scopes: []string{wsProj}, Statuses: []string{payload.StatusActive}})
		require.NoError(t, err)
		assert.Len(t, active, 3, "active entries in %s", wsProj)
	})
	t.Run("SessionDaysOnGlobal", func(t *testing.T) {
		sums, err := e.Store().Events(ctx, sqlstore.EventFilter{Stream: observer.GlobalStream, Type: events.TypeCompactionSummary, IDPrefix: "legacy:"})
		require.NoError(t, err)
		assert.Len(t, sums, 3, "legacy compaction summaries on global")
	})
}

// TestLegacyRememberIsPayload: a legacy entry with a float importance and
// the engine's own Remember write memory/remember data that decodes
// through payload; the import writes the importance the fold gives the
// entry (payload.ClampImportance: 2.5 is 2), so for the same memory the
// two producers write the same data but for what data.legacy keeps.
func TestLegacyRememberIsPayload(t *testing.T) {
	t.Run("Importances", func(t *testing.T) {
		for _, tc := range []struct {
			in   string
			want *int
		}{
			{`2.5`, new(2)}, {`1.6`, new(1)}, {`7`, new(3)}, {`-1`, new(0)}, {`"2.5"`, new(2)}, {`"high"`, new(2)},
			{`null`, nil}, {`"much"`, nil},
		} {
			lf := entriesFile("global/memory_entries.json", []byte(`[{"id":"i","content":"x","importance":`+tc.in+`}]`))
			require.NoError(t, lf.Err)
			require.Len(t, lf.Events, 1, "importance %s", tc.in)
			var d payload.Remember
			require.NoError(t, payload.Unmarshal(lf.Events[0].Data, &d), "importance %s: %s", tc.in, lf.Events[0].Data)
			assert.Equal(t, tc.want, d.Importance, "importance %s: got data %s", tc.in, lf.Events[0].Data)
		}
	})

	ctx := context.Background()
	e := openImportEngine(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "global"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "global", "memory_entries.json"),
		[]byte(`[{"id":"f-1","content":"Deploy on Tuesdays.","type":"Decision","importance":2.5,"status":"active"}]`), 0o600))
	rep, err := ImportLegacy(ctx, e, dir, Options{})
	require.NoError(t, err)
	require.EqualValues(t, 1, rep.Total.Appended, "got %+v", rep.Total)
	two := 2
	own, err := e.Remember(ctx, observer.RememberRequest{Content: "Deploy on Tuesdays.", Type: payload.TypeDecision, Importance: &two})
	require.NoError(t, err)

	var got []payload.Remember
	require.NoError(t, e.Log().Scan(observer.GlobalStream, 0, func(ev events.Envelope) error {
		if ev.Type == events.TypeMemoryRemember {
			var d payload.Remember
			require.NoError(t, payload.Unmarshal(ev.Data, &d), "%s: %s", ev.ID, ev.Data)
			assert.NotContains(t, string(ev.Data), "2.5", "%s: got data %s, want the importance the fold reads", ev.ID, ev.Data)
			got = append(got, d)
		}
		return nil
	}))
	require.Len(t, got, 2, "got %+v", got)
	legacy, engine := got[0], got[1]
	require.NotNil(t, legacy.Legacy, "the import's remember keeps no legacy meta: %+v", legacy)
	assert.Equal(t, payload.LegacyMeta{Source: "global/memory_entries.json", ID: "f-1", Status: "active"}, *legacy.Legacy)
	legacy.Legacy = nil
	assert.Equal(t, engine, legacy, "the same memory, written by the import and by the engine")
	assert.Equal(t, &two, legacy.Importance)

	entries, err := e.Entries(ctx, observer.EntryFilter{Scopes: []string{observer.GlobalStream}})
	require.NoError(t, err)
	require.Len(t, entries, 2, "got %+v", entries)
	for _, en := range entries {
		assert.Equal(t, 2, en.Importance, "%s (the engine's is %s): got %+v", en.ID, own.ID, en)
	}
}

func TestImportLegacyErrors(t *testing.T) {
	ctx := context.Background()
	e := openImportEngine(t)
	t.Run("ErrNothingToImport", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600)
		_, err := ImportLegacy(ctx, e, dir, Options{})
		require.ErrorIs(t, err, ErrNothingToImport, "got %v, want ErrNothingToImport", err)
	})
	t.Run("ErrMissing", func(t *testing.T) {
		_, err := ImportLegacy(ctx, e, filepath.Join(t.TempDir(), "nope"), Options{})
		require.ErrorIs(t, err, os.ErrNotExist, "got %v, want not-exist", err)
	})
	t.Run("BadFilesReportedOthersImported", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "scopes", "ws-nothex"), 0o700)
		os.MkdirAll(filepath.Join(dir, "global"), 0o700)
		os.WriteFile(filepath.Join(dir, "scopes", "ws-nothex", "memory_entries.json"), []byte(`[]`), 0o600)
		os.WriteFile(filepath.Join(dir, "global", "memory_entries.json"),
			[]byte(`{"entries":[{"id":"a","content":"kept"},{"id":"b","title":""},"not an object"]}`), 0o600)
		rep, err := ImportLegacy(ctx, e, dir, Options{})
		require.NoError(t, err)
		require.EqualValues(t, 1, rep.Total.Failed, "got %+v, want 1 unreadable file and 1 entry appended", rep.Total)
		require.EqualValues(t, 1, rep.Total.Appended, "got %+v, want 1 unreadable file and 1 entry appended", rep.Total)
		for _, f := range rep.Files {
			switch f.Path {
			case "scopes/ws-nothex/memory_entries.json":
				assert.Contains(t, f.Error, "not a workspace key", "got error %q", f.Error)
			case "global/memory_entries.json":
				assert.False(t, f.Skipped["entry without content"] != 1 || f.Skipped["entry not an object of the expected shape"] != 1, "got skipped %v", f.Skipped)
			}
		}
	})
	t.Run("OversizedFactCutAndNoted", func(t *testing.T) {
		dir := t.TempDir()
		big := "- The build log: " + strings.Repeat("x", observer.MaxEventBytes) + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "global.md"), []byte(big), 0o600))
		rep, err := ImportLegacy(ctx, e, dir, Options{})
		require.NoError(t, err)
		require.EqualValues(t, 1, rep.Total.Appended, "got %+v, want the fact appended, cut to fit", rep.Total)
		require.EqualValues(t, 0, rep.Total.Rejected, "got %+v, want the fact appended, cut to fit", rep.Total)
		notes := strings.Join(rep.Files[0].Notes, "\n")
		assert.Contains(t, notes, "1 events had their text cut", "got notes %q, want the cut noted", notes)
	})
	t.Run("ErrNothingRead", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "global"), 0o700)
		os.WriteFile(filepath.Join(dir, "global", "memory_entries.json"), []byte(`{"version":1}`), 0o600)
		_, err := ImportLegacy(ctx, e, dir, Options{})
		require.ErrorIs(t, err, ErrNothingRead, "got %v, want ErrNothingRead", err)
	})
}

// legacySeeds returns the files of the legacy fixtures that end in ext.
func legacySeeds(f *testing.F, ext string) [][]byte {
	f.Helper()
	var out [][]byte
	for _, root := range []string{legacyMDTree, legacyWSTree} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ext) {
				b, err := os.ReadFile(p)
				require.NoError(f, err)
				out = append(out, b)
			}
			return nil
		})
	}
	require.NotEqualValues(f, 0, len(out), "no %s seeds", ext)
	return out
}

// FuzzLegacyMarkdown: any bytes parse without panic into trimmed,
// non-empty blocks; every fact maps to an event that intake accepts.
func FuzzLegacyMarkdown(f *testing.F) {
	for _, b := range legacySeeds(f, ".md") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, blk := range parseLegacyMarkdown(b) {
			if blk.text == "" || blk.text != strings.TrimSpace(blk.text) {
				t.Fatalf("got block %q, want non-empty and trimmed", blk.text)
			}
		}
		for _, s := range sessionSections(b) {
			if s == "" {
				t.Fatal("got an empty section")
			}
		}
		for _, lf := range []LegacyFile{markdownFacts("knowledge/x.md", b), sessionDay("sessions/2026-01-02.md", b)} {
			checkIntake(t, lf)
		}
	})
}

// FuzzLegacyEntries: any bytes decode without panic; every entry maps to
// an event that intake accepts (or the file is refused as a whole).
func FuzzLegacyEntries(f *testing.F) {
	for _, b := range legacySeeds(f, ".json") {
		f.Add(b)
	}
	f.Add([]byte(`{"entries":[{"id":7,"content":"x","importance":"urgent","tags":"a,,b","createdAt":"1e12","status":"deleted"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		lf := entriesFile("scopes/"+wsProj+"/memory_entries.json", b)
		checkIntake(t, lf)
		if len(lf.Forgets) > len(lf.Events) {
			t.Fatalf("got %d forgets for %d remembers", len(lf.Forgets), len(lf.Events))
		}
	})
}

// checkIntake validates every event of lf as intake would.
func checkIntake(t *testing.T, lf LegacyFile) {
	t.Helper()
	for i := range lf.Events {
		line, _, err := marshalFit(&lf.Events[i])
		require.NoError(t, err)
		ev, lerr := observer.Validate(line, i+1)
		if lerr != nil {
			var d struct{ Content string }
			json.Unmarshal(lf.Events[i].Data, &d)
			if strings.Contains(lerr.Msg, "credential") && observer.OnlySecret(d.Content) {
				continue // refused by design: a memory that is only a secret
			}
			t.Fatalf("%s: event refused by intake: %v\n%s", lf.Path, lerr, line)
		}
		if sc, lerr := observer.ResolveStream(&ev, "", i+1, nil); lerr != nil || (sc.Stream != observer.GlobalStream && sc.Stream != wsProj) {
			t.Fatalf("%s: got stream %q, %v", lf.Path, sc.Stream, lerr)
		}
	}
}
