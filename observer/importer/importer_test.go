package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/dsh"
	"dshmem/observer/dsh/dshtest"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const dshFixtures = "../../testdata/dsh-sessions"

func openImportEngine(t *testing.T) *observer.Engine {
	t.Helper()
	e, err := observer.Open(context.Background(), t.TempDir(), observer.Options{})
	require.NoError(t, err, "open")
	t.Cleanup(func() { e.Close() })
	return e
}

// eventRows returns every event of the index as "stream id type time
// session data", in (stream, seq) order.
func eventRows(t *testing.T, e *observer.Engine) []string {
	t.Helper()
	evs, err := e.Store().Events(context.Background(), sqlstore.EventFilter{})
	require.NoError(t, err)
	var out []string
	for _, ev := range evs {
		out = append(out, strings.Join([]string{ev.Stream, ev.ID, ev.Type, ev.Time, ev.Session, string(ev.Data)}, " "))
	}
	return out
}

// fixtureSession is one JSONL fixture with its placeholders filled the
// way the host's own tests fill them.
type fixtureSession struct {
	name, id, cwd string
	lines         [][]byte
}

func filledFixtures(t *testing.T) []fixtureSession {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dshFixtures, "*--session*.jsonl"))
	require.NoError(t, err, "fixtures: %v %v", paths, err)
	require.False(t, len(paths) < 5, "fixtures: %v %v", paths, err)
	var out []fixtureSession
	for _, p := range paths {
		name, _, _ := strings.Cut(filepath.Base(p), "--")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		b = bytes.ReplaceAll(b, []byte("{{sessionId}}"), []byte("session-"+name))
		b = bytes.ReplaceAll(b, []byte("{{cwd}}"), []byte("/home/u/"+name))
		var hdr struct{ ID, Cwd string }
		lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
		require.NoError(t, json.Unmarshal(lines[0], &hdr))
		out = append(out, fixtureSession{name: name, id: hdr.ID, cwd: hdr.Cwd, lines: lines})
	}
	return out
}

// hostDir is <root>/--<projectKey(cwd)>--/<sid>, the host's layout.
func hostDir(t *testing.T, root string, s fixtureSession) string {
	t.Helper()
	key := strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(s.cwd)
	dir := filepath.Join(root, "--"+key+"--", s.id)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	return dir
}

func writeZstdLog(t *testing.T, path string, lines [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := dshtest.WriteZstd(&buf, lines, 3 /* lines per frame */); err != nil {
		t.Fatal(err)
	}
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	return buf.Bytes()
}

func mustImportDSH(t *testing.T, e *observer.Engine, path string) Report {
	t.Helper()
	rep, err := ImportDSH(context.Background(), e, path, Options{Batch: 64})
	require.NoError(t, err, "import %s", path)
	return rep
}

// checkFirstImport checks that every event read was appended and none
// was refused.
func checkFirstImport(t *testing.T, rep Report) {
	t.Helper()
	require.EqualValues(t, 0, rep.Total.Failed, "got %d unreadable files and %d rejected events, want 0: %+v", rep.Total.Failed, rep.Total.Rejected, rep.Files)
	require.EqualValues(t, 0, rep.Total.Rejected, "got %d unreadable files and %d rejected events, want 0: %+v", rep.Total.Failed, rep.Total.Rejected, rep.Files)
	require.NotEqualValues(t, 0, rep.Total.Events, "got %d events, %d appended, %d duplicates; want all appended", rep.Total.Events, rep.Total.Appended, rep.Total.Duplicates)
	require.Equal(t, rep.Total.Events, rep.Total.Appended, "got %d events, %d appended, %d duplicates; want all appended", rep.Total.Events, rep.Total.Appended, rep.Total.Duplicates)
	require.EqualValues(t, 0, rep.Total.Duplicates, "got %d events, %d appended, %d duplicates; want all appended", rep.Total.Events, rep.Total.Appended, rep.Total.Duplicates)
}

func checkReimport(t *testing.T, rep Report, want int) {
	t.Helper()
	require.EqualValues(t, 0, rep.Total.Appended, "re-import: got %d appended, %d duplicates, %d rejected; want 0, %d, 0", rep.Total.Appended, rep.Total.Duplicates, rep.Total.Rejected, want)
	require.Equal(t, want, rep.Total.Duplicates, "re-import: got %d appended, %d duplicates, %d rejected; want 0, %d, 0", rep.Total.Appended, rep.Total.Duplicates, rep.Total.Rejected, want)
	require.EqualValues(t, 0, rep.Total.Rejected, "re-import: got %d appended, %d duplicates, %d rejected; want 0, %d, 0", rep.Total.Appended, rep.Total.Duplicates, rep.Total.Rejected, want)
}

func TestImportDSHFixturesAsIs(t *testing.T) {
	e := openImportEngine(t)
	rep := mustImportDSH(t, e, dshFixtures)
	require.EqualValues(t, 6, rep.Total.Files, "got %d files, want 6 (5 snapshots + live)", rep.Total.Files)
	require.EqualValues(t, 0, rep.Total.Failed, "got %d unreadable, %d rejected; want 0: %+v", rep.Total.Failed, rep.Total.Rejected, rep.Files)
	// Three snapshots share the placeholder id "{{sessionId}}": the
	// second and third are noted; their events with an id the first
	// used are duplicates when they are the same event, and refused
	// when they are another (their session/start headers differ).
	var refused []string
	for _, f := range rep.Files {
		refused = append(refused, f.Rejections...)
	}
	require.Len(t, refused, rep.Total.Rejected)
	require.EqualValues(t, 2, rep.Total.Rejected, "got %d rejected: %v", rep.Total.Rejected, refused)
	for _, r := range refused {
		assert.Contains(t, r, `"dsh:{{sessionId}}:header" is already the id of another event in stream global`, "rejection %q", r)
	}
	placeholders := 0
	for _, f := range rep.Files {
		live := strings.Contains(f.Path, "live")
		if live {
			assert.False(t, len(f.Streams) != 1 || f.Streams[0] != observer.StreamForCwd("/tmp/dshlive/proj") || len(f.Notes) != 0, "live: got streams %v notes %v, want its workspace stream and no note", f.Streams, f.Notes)
			continue
		}
		assert.True(t, reflect.DeepEqual(f.Streams, []string{observer.GlobalStream}), "%s: got streams %v, want [global] (its cwd is a placeholder)", f.Path, f.Streams)
		assert.Contains(t, strings.Join(f.Notes, "\n"), "not an absolute path", "%s: got notes %q, want the relative-cwd note", f.Path, f.Notes)
		if f.Session == "{{sessionId}}" {
			placeholders++
			shared := strings.Contains(strings.Join(f.Notes, "\n"), "already read from")
			assert.Equal(t, (placeholders > 1), shared, "%s: shared-id note %v, want %v", f.Path, shared, placeholders > 1)
		}
	}
	require.EqualValues(t, 3, placeholders, "got %d {{sessionId}} files, want 3", placeholders)
	hdr, err := e.Store().Events(context.Background(), sqlstore.EventFilter{ID: "dsh:33333333-3333-4333-8333-333333333333:header"})
	require.NoError(t, err)
	require.Len(t, hdr, 1, "the sub-agent session's session/start")
	var start payload.SessionStart
	require.NoError(t, payload.Unmarshal(hdr[0].Data, &start))
	assert.False(t, start.Origin != "subagent" || start.Parent != "11111111-1111-4111-8111-111111111111" || start.HostCwd != "{{cwd}}", "sub-agent session/start: got %+v, want origin subagent, its parent, hostCwd {{cwd}}", start)
	first := rep.Total
	again := mustImportDSH(t, e, dshFixtures)
	assert.EqualValues(t, 0, again.Total.Appended, "re-import appended %d", again.Total.Appended)
	assert.Equal(t, first.Appended+first.Duplicates, again.Total.Duplicates, "re-import duplicates")
	assert.Equal(t, first.Rejected, again.Total.Rejected, "re-import refuses the same reused ids again")
}

func TestImportDSHTree(t *testing.T) {
	fx := filledFixtures(t)
	jsonlRoot, zstdRoot := t.TempDir(), t.TempDir()
	for _, s := range fx {
		var b []byte
		for _, l := range s.lines {
			b = append(append(b, l...), '\n')
		}
		require.NoError(t, os.WriteFile(filepath.Join(hostDir(t, jsonlRoot, s), "session.jsonl"), b, 0o600))
		writeZstdLog(t, filepath.Join(hostDir(t, zstdRoot, s), "session.jsonl.zstd"), s.lines)
	}

	ej, ez := openImportEngine(t), openImportEngine(t)
	repJ := mustImportDSH(t, ej, jsonlRoot)
	repZ := mustImportDSH(t, ez, zstdRoot)
	t.Run("OK", func(t *testing.T) {
		for _, rep := range []Report{repJ, repZ} {
			checkFirstImport(t, rep)
			require.Equal(t, len(fx), rep.Total.Files, "got %d files, want %d", rep.Total.Files, len(fx))
			for i, f := range rep.Files {
				assert.False(t, len(f.Notes) != 0 || f.TornBytes != 0, "%s: got notes %q, torn %d; want none", f.Path, f.Notes, f.TornBytes)
				want := observer.StreamForCwd(fx[i].cwd)
				assert.True(t, reflect.DeepEqual(f.Streams, []string{want}), "%s: got streams %v, want [%s]", f.Path, f.Streams, want)
			}
		}
	})
	t.Run("ZstdEqualsJSONL", func(t *testing.T) {
		j, z := eventRows(t, ej), eventRows(t, ez)
		require.True(t, reflect.DeepEqual(j, z), "got %d events from zstd, %d from JSONL, or they differ", len(z), len(j))
	})
	t.Run("ReimportAppendsNothing", func(t *testing.T) {
		checkReimport(t, mustImportDSH(t, ej, jsonlRoot), repJ.Total.Events)
		checkReimport(t, mustImportDSH(t, ez, zstdRoot), repZ.Total.Events)
		// The other form of the same logs is the same events.
		checkReimport(t, mustImportDSH(t, ej, zstdRoot), repZ.Total.Events)
	})
	t.Run("InjectedNeverUserSaid", func(t *testing.T) {
		plugin := pluginTexts(t, fx)
		require.NotEqualValues(t, 0, len(plugin), "no plugin-injected text in the fixtures; the check below would prove nothing")
		msgs, err := ej.Store().Events(context.Background(), sqlstore.EventFilter{Type: events.TypeUserMessage})
		require.NoError(t, err)
		injected, said := 0, 0
		for _, ev := range msgs {
			var d payload.UserMessage
			require.NoError(t, payload.Unmarshal(ev.Data, &d), "user/message %s", ev.ID)
			if d.Injected {
				injected++
				continue
			}
			said++
			assert.False(t, plugin[d.Text], "plugin text stored as something the user said: %.80q", d.Text)
		}
		require.NotEqualValues(t, 0, injected, "got %d injected and %d user-said messages, want both > 0", injected, said)
		require.NotEqualValues(t, 0, said, "got %d injected and %d user-said messages, want both > 0", injected, said)
	})
}

// pluginTexts collects the text of every user-role message a plugin put
// into the fixtures (user/message rows and messages spliced into the
// inbox with source.kind "plugin").
func pluginTexts(t *testing.T, fx []fixtureSession) map[string]bool {
	t.Helper()
	type msg struct {
		Content []struct{ Type, Text string }
		Source  *struct{ Kind string }
	}
	texts := map[string]bool{}
	add := func(m msg) {
		if m.Source == nil || m.Source.Kind != "plugin" {
			return
		}
		var parts []string
		for _, c := range m.Content {
			if c.Type == "text" && c.Text != "" {
				parts = append(parts, c.Text)
			}
		}
		if s := strings.Join(parts, "\n"); s != "" {
			texts[s] = true
		}
	}
	for _, s := range fx {
		for _, l := range s.lines[1:] {
			var row struct {
				Type string
				Data json.RawMessage
			}
			if json.Unmarshal(l, &row) != nil {
				continue
			}
			switch row.Type {
			case "user/message":
				var m msg
				if json.Unmarshal(row.Data, &m) == nil {
					add(m)
				}
			case "agent/inbox/spliced":
				var d struct{ Inserted []msg }
				if json.Unmarshal(row.Data, &d) == nil {
					for _, m := range d.Inserted {
						add(m)
					}
				}
			}
		}
	}
	return texts
}

func TestImportDSHTornTail(t *testing.T) {
	fx := filledFixtures(t)
	s := fx[0]
	root := t.TempDir()
	path := filepath.Join(hostDir(t, root, s), "session.jsonl.zstd")
	full := writeZstdLog(t, path, s.lines)
	// The prefix without the last batch, and the log cut in the middle
	// of that last frame.
	nlast := (len(s.lines) - 1) % 3
	if nlast == 0 {
		nlast = 3
	}
	var prefix bytes.Buffer
	require.NoError(t, dshtest.WriteZstd(&prefix, s.lines[:len(s.lines)-nlast], 3))
	require.True(t, bytes.HasPrefix(full, prefix.Bytes()), "the prefix encoding is not a prefix of the full log")
	cut := prefix.Len() + (len(full)-prefix.Len())/2
	require.NoError(t, os.WriteFile(path, full[:cut], 0o600))
	whole := filepath.Join(t.TempDir(), "session.jsonl.zstd")
	require.NoError(t, os.WriteFile(whole, prefix.Bytes(), 0o600))
	wholeSess, err := dsh.ReadFile(whole)
	require.NoError(t, err)
	fullSess, err := dsh.ReadFile(filepath.Join(dshFixtures, s.name+"--session.jsonl"))
	require.NoError(t, err)

	e := openImportEngine(t)
	rep := mustImportDSH(t, e, root)
	checkFirstImport(t, rep)
	f := rep.Files[0]
	want := int64(cut - prefix.Len())
	assert.Equal(t, want, f.TornBytes, "got %d torn bytes, want %d", f.TornBytes, want)
	assert.False(t, f.Appended != len(wholeSess.Events) || f.Appended >= len(fullSess.Events), "got %d appended, want %d (the whole frames; the full log has %d)", f.Appended, len(wholeSess.Events), len(fullSess.Events))
	t.Run("ReimportAfterTheHostFinished", func(t *testing.T) {
		require.NoError(t, os.WriteFile(path, full, 0o600))
		rep := mustImportDSH(t, e, root)
		f := rep.Files[0]
		assert.False(t, f.TornBytes != 0 || f.Duplicates != len(wholeSess.Events) || f.Appended != f.Events-f.Duplicates || f.Appended == 0, "got %+v, want the rest appended and the first part duplicate", f)
	})
}

func TestImportDSHErrors(t *testing.T) {
	e := openImportEngine(t)
	ctx := context.Background()
	t.Run("ErrMissingPath", func(t *testing.T) {
		_, err := ImportDSH(ctx, e, filepath.Join(t.TempDir(), "nope"), Options{})
		require.ErrorIs(t, err, os.ErrNotExist, "got %v, want a not-exist error", err)
	})
	t.Run("ErrNothingToImport", func(t *testing.T) {
		_, err := ImportDSH(ctx, e, t.TempDir(), Options{})
		require.ErrorIs(t, err, ErrNothingToImport, "got %v, want ErrNothingToImport", err)
	})
	t.Run("ErrNothingRead", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "session.jsonl"), []byte("{\"type\":\"not-a-header\"}\n"), 0o600)
		rep, err := ImportDSH(ctx, e, dir, Options{})
		if !errors.Is(err, ErrNothingRead) || rep.Total.Failed != 1 || rep.Files[0].Error == "" {
			t.Fatalf("got %v, %+v; want ErrNothingRead and the file's error", err, rep)
		}
	})
	t.Run("UnreadableFileDoesNotStopOthers", func(t *testing.T) {
		dir := t.TempDir()
		bad := filepath.Join(dir, "a", "session.jsonl")
		os.MkdirAll(filepath.Dir(bad), 0o700)
		os.WriteFile(bad, []byte("not json\n"), 0o600)
		good := filepath.Join(dir, "b")
		os.MkdirAll(good, 0o700)
		src, _ := os.ReadFile(filepath.Join(dshFixtures, "subagent-continuable--session.1.jsonl"))
		os.WriteFile(filepath.Join(good, "session.jsonl"), src, 0o600)
		rep, err := ImportDSH(ctx, e, dir, Options{})
		require.NoError(t, err, "got %v, %+v; want one unreadable file and the other imported", err, rep.Total)
		require.EqualValues(t, 1, rep.Total.Failed, "got %v, %+v; want one unreadable file and the other imported", err, rep.Total)
		require.NotEqualValues(t, 0, rep.Total.Appended, "got %v, %+v; want one unreadable file and the other imported", err, rep.Total)
	})
	t.Run("UnknownTypesCounted", func(t *testing.T) {
		dir := t.TempDir()
		log := `{"type":"session","version":0,"id":"s-unknown","createdAt":1786000000000,"cwd":"/home/u/x","delegationDepth":0}
{"type":"future/thing","seq":0,"time":1786000000001,"data":{}}
{"type":"future/quiet","seq":1,"time":1786000000002,"ignorable":true,"data":{}}
{"type":"user/message","seq":2,"time":1786000000003,"data":{"role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}}
`
		os.WriteFile(filepath.Join(dir, "x--session.jsonl"), []byte(log), 0o600)
		rep, err := ImportDSH(ctx, e, dir, Options{})
		require.NoError(t, err)
		f := rep.Files[0]
		require.EqualValues(t, 1, f.Unknown["future/thing"], "got unknown %v skipped %v appended %d; want future/thing=1, future/quiet=1, 2", f.Unknown, f.Skipped, f.Appended)
		require.EqualValues(t, 1, f.Skipped["future/quiet"], "got unknown %v skipped %v appended %d; want future/thing=1, future/quiet=1, 2", f.Unknown, f.Skipped, f.Appended)
		require.EqualValues(t, 2, f.Appended, "got unknown %v skipped %v appended %d; want future/thing=1, future/quiet=1, 2", f.Unknown, f.Skipped, f.Appended)
	})
}

func TestMarshalFit(t *testing.T) {
	big := strings.Repeat("x<y\"", observer.MaxEventBytes/3) // escaping makes it longer
	ok := true
	want := payload.ToolResult{Name: "bash", OK: &ok, Text: big, CallID: "c1", Turn: 2, Step: 3}
	e := dshEnvelope(t, want)
	line, shrunk, err := marshalFit(&e)
	require.NoError(t, err, "got shrunk %v err %v, want a cut", shrunk, err)
	require.True(t, shrunk, "got shrunk %v err %v, want a cut", shrunk, err)
	require.False(t, len(line) > observer.MaxEventBytes, "got %d bytes, want at most %d", len(line), observer.MaxEventBytes)
	ev, lerr := observer.Validate(line, 1)
	require.Nil(t, lerr, "cut line refused: %v", lerr)

	// Only the text changed: cut, marked, the rest of the data as the
	// mapper wrote it.
	var got payload.ToolResult
	require.NoError(t, payload.Unmarshal(ev.Data, &got))
	text, marker, found := strings.Cut(got.Text, "\n[dshmem import: ")
	require.True(t, found, "got text ending %q, want the cut marker", got.Text[max(len(got.Text)-80, 0):])
	assert.True(t, strings.HasPrefix(big, text), "the kept text is not a prefix of the original")
	assert.Equal(t, fmt.Sprintf(cutMarker, len(big)-len(text)), "\n[dshmem import: "+marker)
	want.Text = got.Text
	assert.Equal(t, want, got)
	raw, err := payload.Marshal(want)
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(ev.Data), "got data in another order than payload.Marshal's")

	small := dshEnvelope(t, payload.ToolResult{Name: "bash", Text: "short"})
	if _, shrunk, _ := marshalFit(&small); shrunk {
		t.Fatal("got a cut of a small event")
	}
}

// dshEnvelope is a tool/result envelope as observer/dsh's mapper makes it.
func dshEnvelope(t *testing.T, r payload.ToolResult) events.Envelope {
	t.Helper()
	d, err := payload.Marshal(r)
	require.NoError(t, err)
	return events.Envelope{ID: "dsh:s:1", Type: events.TypeToolResult, Time: "2026-08-18T10:00:00.000Z", Data: d}
}

func TestWithHostCwd(t *testing.T) {
	mapped := func(s payload.SessionStart) string {
		b, err := payload.Marshal(s)
		require.NoError(t, err)
		return string(b)
	}
	for _, tc := range []struct{ name, in, want string }{
		// The mapper's data gets hostCwd appended, as a raw edit would.
		{"Top", mapped(payload.SessionStart{Origin: payload.OriginTop}), `{"origin":"top","delegationDepth":0,"hostCwd":"x"}`},
		{"Subagent", mapped(payload.SessionStart{Origin: payload.OriginSubagent, Parent: "p", DelegationDepth: 1}),
			`{"origin":"subagent","parent":"p","delegationDepth":1,"hostCwd":"x"}`},
		{"HasOne", mapped(payload.SessionStart{Origin: payload.OriginTop, HostCwd: "y"}), `{"origin":"top","delegationDepth":0,"hostCwd":"y"}`},
		{"NotAnObject", `[1]`, `[1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(withHostCwd(json.RawMessage(tc.in), "x"))
			assert.Equal(t, tc.want, got, "withHostCwd(%s)", tc.in)
		})
	}
}
