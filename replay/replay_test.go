package replay

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/projections from the current output")

// messages is a history without memory: sessions, messages, tool results.
func messages() []step {
	var s []step
	for i := 0; i < 30; i++ {
		stream := []string{wsA, wsB, "global"}[i%3]
		s = append(s, step{stream: stream, typ: events.TypeUserMessage, at: fmt.Sprintf("2026-08-20T08:00:%02dZ", i),
			session: "s" + stream[:4], cwd: map[bool]string{true: "/p/" + stream, false: ""}[stream != "global"],
			data: map[string]any{"text": fmt.Sprintf("message %d about the cart", i)}})
	}
	return s
}

// withoutCwd is steps with no cwd on any event: a workspace stream that
// never names its directory still gets its scope files, live as in replay.
func withoutCwd(steps []step) []step {
	out := slices.Clone(steps)
	for i := range out {
		out[i].cwd = ""
	}
	return out
}

// registered is messages with a scope/register of each workspace stream:
// wsA's first (its first event's cwd is a subdirectory), wsB's after its
// first messages, so the registered directory must win over the first cwd
// however the stream is split into folds.
func registered() []step {
	reg := func(stream, at string) step {
		return step{stream: stream, typ: events.TypeScopeRegister, at: at, cwd: "/p",
			data: map[string]any{"dir": "/p/" + stream}}
	}
	var s []step
	for _, m := range messages() {
		if m.cwd != "" {
			m.cwd += "/sub"
		}
		s = append(s, m)
	}
	return append(append([]step{reg(wsA, "2026-08-20T07:59:59Z")}, s[:7]...), append([]step{reg(wsB, "2026-08-20T08:00:07Z")}, s[7:]...)...)
}

func TestRebuildEqualsLive(t *testing.T) {
	ctx := context.Background()
	histories := map[string][]step{"scripted": scripted(), "messages": messages(), "both": append(messages(), scripted()...),
		"nocwd": withoutCwd(messages()), "registered": registered()}
	for _, name := range []string{"scripted", "messages", "both", "nocwd", "registered"} {
		evs := envelopes(histories[name])
		// Live folds one event at a time in script order; a second live
		// root folds the streams one after another in reverse name order.
		live := t.TempDir()
		lg, st := liveRoot(t, live, evs)
		var reordered []events.Envelope
		for _, s := range []string{wsB, wsA, "global"} {
			for _, e := range evs {
				if e.Stream == s {
					reordered = append(reordered, e)
				}
			}
		}
		live2 := t.TempDir()
		_, st2 := liveRoot(t, live2, reordered)
		for _, chunk := range []int{0, 1, 3} {
			t.Run(fmt.Sprintf("%s/chunk=%d", name, chunk), func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "out")
				stats, err := Rebuild(ctx, lg, out, Options{ChunkSize: chunk})
				require.NoError(t, err)
				assert.Equal(t, uint64(len(evs)), stats.Events, "got %d events, want %d", stats.Events, len(evs))
				for _, l := range []string{live, live2} {
					diffs, n, err := CompareFiles(l, out)
					require.NoError(t, err)
					assert.False(t, len(diffs) > 0 || n == 0, "%d files compared; differences: %v", n, diffs)
				}
				if name == "registered" {
					for _, ws := range []string{wsA, wsB} {
						b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(projector.ScopePath(ws))))
						assert.False(t, err != nil || !strings.Contains(string(b), `"cwd": "/p/`+ws+`"`), "scope.json of %s: %s, %v; want the registered directory /p/%s", ws, b, err, ws)
					}
				}
				rs, err := sqlstore.Open(filepath.Join(out, IndexFile))
				require.NoError(t, err)
				defer rs.Close()
				if got, want := filesDumpOf(t, st), filesDumpOf(t, rs); got != want {
					t.Errorf("live files table differs from replay: %s", dumpDifference(t, projector.DumpFiles, st, rs))
				}
				want := dumpOf(t, rs)
				got := dumpOf(t, st)
				assert.Equal(t, want, got, "live index dump differs from replay: %s", dumpDifference(t, projector.Dump, st, rs))
				if got := dumpOf(t, st2); got != want {
					t.Errorf("reordered live index dump differs from replay: %s", dumpDifference(t, projector.Dump, st2, rs))
				}
			})
		}
	}
}

// The projections of the scripted history, byte for byte.
func TestGolden(t *testing.T) {
	evs := envelopes(scripted())
	live := t.TempDir()
	liveRoot(t, live, evs)
	got := readTree(t, live)
	dir := filepath.Join("..", "testdata", "projections", "scripted")
	if *update {
		os.RemoveAll(dir)
		for p, b := range got {
			f := filepath.Join(dir, filepath.FromSlash(p))
			require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
			require.NoError(t, os.WriteFile(f, []byte(b), 0o644))
		}
	}
	want := readTree(t, dir)
	require.NotEqualValues(t, 0, len(want), "no golden files in %s (run go test ./replay -run TestGolden -update)", dir)
	for _, p := range sortedKeys(want, got) {
		assert.Equal(t, want[p], got[p], "%s: got\n%s\nwant\n%s", p, got[p], want[p])
	}
	// What the script must show, whatever the golden says.
	for _, c := range []struct{ path, has, lacks string }{
		{"global.md", "Install dependencies with bun.", "never npm"},
		{"global.md", "", "Always run gofmt"},
		{"global.md", "", "Use tabs"},
		{"knowledge/database.md", "port 5434 since the move", ""},
		{"knowledge/storage.md", "conflict: cg-", ""},
		{"knowledge/procedure.md", "make deploy", ""},
		{"index.md", "[数据库](knowledge/topic-", ""},
		{"sessions/2026-08-18.md", "<!-- compaction:c-a2 -->", "The same compactionId again"},
		{"sessions/2026-08-18.md", "\\### not a heading", ""},
		{"sessions/2026-08-18.md", "<!-- session:sa -->", ""},
		{"sessions/2026-08-19.md", "c-a3", ""},
		{"scopes/" + wsA + "/scope.json", `"cwd": "/home/u/shop"`, ""},
		{"scopes/" + wsA + "/memory_summary.md", "cwd /home/u/shop", "Workspace fact 0:"},
	} {
		if !strings.Contains(got[c.path], c.has) || c.lacks != "" && strings.Contains(got[c.path], c.lacks) {
			t.Errorf("%s: want %q and not %q:\n%s", c.path, c.has, c.lacks, got[c.path])
		}
	}
	day := got["sessions/2026-08-18.md"]
	order := []string{"c-b1", "c-a1", "c-b2", "c-b3", "c-a2", "session:sa"}
	last := -1
	for _, id := range order {
		i := strings.Index(day, id)
		assert.False(t, i < last, "sessions/2026-08-18.md: %s is out of (time, stream, seq) order:\n%s", id, day)
		last = i
	}
	var hist []string
	for p := range got {
		if strings.Contains(p, "/summary_history/") && strings.Contains(p, wsA) {
			hist = append(hist, p)
		}
	}
	slices.Sort(hist)
	assert.False(t, len(hist) != projector.HistoryKeep || !strings.HasSuffix(hist[len(hist)-1], fmt.Sprintf("%020d.md", 20)), "summary history of %s: got %v, want the newest %d versions ending at seq 20", wsA, hist, projector.HistoryKeep)
}

func sortedKeys(ms ...map[string]string) []string {
	var out []string
	for _, m := range ms {
		for k := range m {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	lg, st := liveRoot(t, root, envelopes(scripted()))
	t.Run("OK", func(t *testing.T) {
		rep, err := Verify(ctx, lg, root, st, VerifyOptions{})
		require.NoError(t, err)
		require.Len(t, rep.Differences, 0, "got %v over %d files, want no differences", rep.Differences, rep.Files)
		require.NotEqualValues(t, 0, rep.Files, "got %v over %d files, want no differences", rep.Differences, rep.Files)
		if _, err := os.Stat(rep.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the rebuild at %s was not removed", rep.Dir)
		}
	})
	t.Run("Differences", func(t *testing.T) {
		day := filepath.Join(root, "sessions", "2026-08-18.md")
		b, _ := os.ReadFile(day)
		os.WriteFile(day, []byte(strings.Join(strings.SplitAfter(string(b), "\n")[:16], "")), 0o644)
		os.Remove(filepath.Join(root, "scopes", wsB, "memory_summary.md"))
		os.WriteFile(filepath.Join(root, "knowledge", "stray.md"), []byte("# Stray\n"), 0o644)
		rep, err := Verify(ctx, lg, root, st, VerifyOptions{})
		require.NoError(t, err)
		got := map[string]string{}
		for _, d := range rep.Differences {
			got[d.Path] = d.Problem
		}
		for p, want := range map[string]string{
			"sessions/2026-08-18.md":               "from line 17",
			"scopes/" + wsB + "/memory_summary.md": "missing from the live root",
			"knowledge/stray.md":                   "does not make it",
		} {
			assert.Contains(t, got[p], want, "%s: got %q, want it to say %q", p, got[p], want)
		}
		assert.Len(t, got, 3, "got %d differences, want 3: %v", len(got), rep.Differences)
	})
	t.Run("IndexDiffers", func(t *testing.T) {
		// The scope's directory changed, and global.md's row names a later seq.
		dir, err := st.Reader().Scope(ctx, wsB)
		require.NoError(t, err)
		tx, err := st.BeginFold(ctx)
		require.NoError(t, err)
		err = tx.RegisterScope(wsB, "/elsewhere", dir.Seq, dir.Time)
		if err == nil {
			err = tx.Commit()
		}
		tx.Close()
		require.NoError(t, err)
		files, err := st.Reader().Files(ctx)
		require.NoError(t, err)
		for _, f := range files {
			if f.Path != "global.md" {
				continue
			}
			w := sqlstore.FileWrite{Path: f.Path, SHA256: f.SHA256, Bytes: f.Bytes, Stream: f.Stream, Seq: f.Seq + 1,
				Positions: f.Positions, Time: f.Time, KeepText: true, Text: f.Text}
			require.NoError(t, st.RecordFiles(ctx, []sqlstore.FileWrite{w}, nil))
		}
		rep, err := Verify(ctx, lg, root, st, VerifyOptions{})
		require.NoError(t, err)
		var idx []string
		for _, d := range rep.Differences {
			if d.Path == IndexFile {
				idx = append(idx, d.Problem)
			}
		}
		assert.False(t, len(idx) != 2 || !strings.Contains(idx[0], "table scopes differs") || !strings.Contains(idx[1], "table files differs"), "got %q, want the scopes and files tables named", idx)
	})
}

// Restore gives back every stream file as the live projector wrote it
// after each event, and the day files as of a time.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	evs := envelopes(scripted())
	root := t.TempDir()
	lg, st := liveRoot(t, root, nil)
	p := projector.New(st)
	p.Root = root
	type key struct {
		path string
		seq  uint64
	}
	snap := map[key]string{} // stream file as of (its stream's) seq
	for _, e := range evs {
		logged := appendAndFold(t, lg, p, e)
		for path, b := range readTree(t, root) {
			if info, _ := projector.ParsePath(path); info.Scope == e.Stream {
				snap[key{path, logged.Seq}] = b
			}
		}
	}
	n := 0
	for _, stream := range []string{"global", wsA, wsB} {
		last := lg.LastSeq(stream)
		for _, path := range sortedKeys(readTree(t, root)) {
			info, _ := projector.ParsePath(path)
			if info.Scope != stream || info.Kind == projector.KindHistory {
				continue
			}
			for seq := uint64(1); seq <= last; seq++ {
				got, err := Restore(ctx, lg, path, Point{Seq: seq}, RestoreOptions{})
				want, existed := snap[key{path, seq}]
				switch {
				case !existed && errors.Is(err, ErrNoSuchFile):
				case err != nil:
					t.Errorf("%s at %d: %v (existed: %v)", path, seq, err, existed)
				case string(got) != want:
					t.Errorf("%s at %d: got\n%s\nwant\n%s", path, seq, got, want)
				}
				n++
			}
		}
	}
	assert.False(t, n < 50, "only %d restores checked", n)
	t.Run("History", func(t *testing.T) {
		for path, want := range readTree(t, root) {
			if info, _ := projector.ParsePath(path); info.Kind == projector.KindHistory {
				got, err := Restore(ctx, lg, path, Point{}, RestoreOptions{})
				assert.False(t, err != nil || string(got) != want, "%s: got %q, %v; want\n%s", path, got, err, want)
			}
		}
	})
	t.Run("DayAtTime", func(t *testing.T) {
		final, _ := os.ReadFile(filepath.Join(root, "sessions", "2026-08-18.md"))
		for _, idx := range []*sqlstore.Store{nil, st} {
			opts := RestoreOptions{Index: idx}
			got, err := Restore(ctx, lg, "sessions/2026-08-18.md", Point{}, opts)
			assert.False(t, err != nil || string(got) != string(final), "now (index %v): got %v\n%s\nwant\n%s", idx != nil, err, got, final)
			got, err = Restore(ctx, lg, "sessions/2026-08-18.md", Point{Time: mustTime("2026-08-18T19:04:59+09:00")}, opts)
			assert.False(t, err != nil || !strings.Contains(string(got), "compaction:c-b3") || strings.Contains(string(got), "compaction:c-a2"), "at c-b3's time (index %v): got %v\n%s", idx != nil, err, got)
			_, err = Restore(ctx, lg, "sessions/2026-08-18.md", Point{Time: mustTime("2026-08-18T10:00:00Z")}, opts)
			assert.ErrorIs(t, err, ErrNoSuchFile, "before the first block: got %v, want ErrNoSuchFile", err)
		}
	})
	t.Run("ErrBadPoint", func(t *testing.T) {
		for _, c := range []struct {
			path string
			at   Point
		}{
			{"sessions/2026-08-18.md", Point{Seq: 3}},
			{"global.md", Point{Time: mustTime("2026-08-18T10:00:00Z")}},
			{"global.md", Point{Seq: 999}},
			{projector.HistoryPath(wsA, 20), Point{Seq: 19}},
		} {
			_, err := Restore(ctx, lg, c.path, c.at, RestoreOptions{})
			assert.ErrorIs(t, err, ErrBadPoint, "%s at %+v: got %v, want ErrBadPoint", c.path, c.at, err)
		}
	})
}

func TestValidatePath(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(root, "sessions"), 0o755)
	os.MkdirAll(filepath.Join(outside, "x"), 0o755)
	os.WriteFile(filepath.Join(outside, "global.md"), []byte("# elsewhere\n"), 0o644)
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "knowledge")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "global.md"), filepath.Join(root, "global.md")))
	t.Run("OK", func(t *testing.T) {
		for in, want := range map[string]string{
			"sessions/2026-08-18.md":               "sessions/2026-08-18.md",
			"./sessions//2026-08-18.md":            "sessions/2026-08-18.md",
			`sessions\2026-08-18.md`:               "sessions/2026-08-18.md",
			"index.md":                             "index.md",
			"scopes/" + wsA + "/memory_summary.md": "scopes/" + wsA + "/memory_summary.md",
		} {
			got, err := ValidatePath(root, in)
			assert.False(t, err != nil || got != want, "%q: got %q, %v; want %q", in, got, err, want)
		}
	})
	t.Run("ErrBadPath", func(t *testing.T) {
		for in, want := range map[string]string{
			"":                               "empty",
			"../x/global.md":                 `".." element`,
			"sessions/../../etc/passwd":      `".." element`,
			"/etc/passwd":                    "absolute",
			filepath.Join(root, "global.md"): "absolute",
			"knowledge/topic.md":             "symlink",
			"global.md":                      "symlink",
			"notes.txt":                      "not a projection",
			"sessions/yesterday.md":          "not a projection",
			"log/global/00000000000000000001.jsonl.zst": "not a projection",
		} {
			_, err := ValidatePath(root, in)
			assert.False(t, !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), want), "%q: got %v, want ErrBadPath saying %q", in, err, want)
		}
	})
}

// A rebuild loads its index without a journal on disk, then hands it
// over in WAL mode, as the live index is: the file header says so
// (bytes 18 and 19, the write and read versions, are 2 in WAL mode).
func TestRebuildLeavesWAL(t *testing.T) {
	lg, _ := liveRoot(t, t.TempDir(), envelopes(messages()))
	out := filepath.Join(t.TempDir(), "out")
	if _, err := Rebuild(context.Background(), lg, out, Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, IndexFile))
	require.NoError(t, err)
	assert.False(t, len(b) < 20 || b[18] != 2 || b[19] != 2, "got header bytes 18-19 %v, want [2 2] (WAL)", b[18:min(len(b), 20)])
}

func TestRebuildErrNotEmpty(t *testing.T) {
	root := t.TempDir()
	lg, _ := liveRoot(t, root, envelopes(messages()))
	out := t.TempDir()
	os.WriteFile(filepath.Join(out, "x"), nil, 0o644)
	_, err := Rebuild(context.Background(), lg, out, Options{})
	require.ErrorIs(t, err, ErrNotEmpty, "got %v, want ErrNotEmpty", err)
}
