package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/observer/dsh"
	"dshmem/observer/dsh/dshtest"
	"dshmem/observer/importer"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostRow is one host line of a DSH session log.
func hostRow(seq int, text string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "user/message", "seq": seq, "time": 1786123401000 + seq,
		"data": map[string]any{"id": fmt.Sprintf("u-%d", seq), "role": "user", "source": map[string]any{"kind": "user"},
			"content": []any{map[string]any{"type": "text", "text": text}}}})
	return b
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	require.NoError(t, f.Close())
}

func hostFrame(t *testing.T, lines ...[]byte) []byte {
	t.Helper()
	var content []byte
	for _, l := range lines {
		content = append(append(content, l...), '\n')
	}
	b, err := dshtest.EncodeFrame(content)
	require.NoError(t, err)
	return b
}

// dshIDs counts the events of the root's index by id, for the ids of sid.
func dshIDs(t *testing.T, eng *observer.Engine, sid string) map[string]int {
	t.Helper()
	evs, err := eng.Store().Events(context.Background(), sqlstore.EventFilter{IDPrefix: "dsh:" + sid + ":"})
	require.NoError(t, err)
	got := map[string]int{}
	for _, ev := range evs {
		got[ev.ID]++
	}
	return got
}

func TestWatcherFollowsLiveLog(t *testing.T) {
	root, host := t.TempDir(), t.TempDir()
	dir := filepath.Join(host, "--work-live--", "sess-live")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "session.jsonl.zstd")
	hdr, _ := json.Marshal(map[string]any{"type": "session", "version": 0, "id": "sess-live", "createdAt": 1786123400000, "cwd": "/work/live", "delegationDepth": 0})
	opts := ServerOptions{DSHSessions: host, Watch: importer.WatchOptions{Interval: time.Hour}}
	ts := startServer(t, root, opts)
	// scan returns how many events of the session the index holds after
	// a scan (the server's own ticker may have scanned first).
	scan := func(ts *testServer) int {
		t.Helper()
		_, err := ts.srv.Watcher().Scan(context.Background())
		require.NoError(t, err)
		return len(dshIDs(t, ts.eng, "sess-live"))
	}
	appendFile(t, path, hostFrame(t, hdr))
	if n := scan(ts); n != 1 {
		t.Fatalf("header: got %d events, want 1 (session/start)", n)
	}
	seq := 0
	next := func(k int) []byte {
		var ls [][]byte
		for range k {
			ls = append(ls, hostRow(seq, fmt.Sprintf("message number %d about the live log", seq)))
			seq++
		}
		return hostFrame(t, ls...)
	}
	appendFile(t, path, next(3))
	if n := scan(ts); n != 4 {
		t.Fatalf("got %d, want 4", n)
	}
	t.Run("HalfWrittenFrame", func(t *testing.T) {
		f := next(2)
		appendFile(t, path, f[:len(f)/2])
		for range 3 { // it waits; it does not fail
			n := scan(ts)
			require.EqualValues(t, 4, n, "got %d events, want still 4: half a frame yields nothing", n)
		}
		appendFile(t, path, f[len(f)/2:])
		n := scan(ts)
		require.EqualValues(t, 6, n, "got %d, want 6 once the frame is whole", n)
	})
	t.Run("RestartResumes", func(t *testing.T) {
		appendFile(t, path, next(2))
		ts.stop() // the final scan of Shutdown takes these two
		// The ticker is an hour: only Shutdown's scan can have moved the
		// cursor to the end of the file.
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, fi.Size(), savedOffset(t, root, path), "after shutdown the cursor is not at the end of the frames written before it")
		appendFile(t, path, next(4))
		f := next(1)
		appendFile(t, path, f[:7])
		ts2 := startServer(t, root, opts)
		scan(ts2)
		appendFile(t, path, f[7:])
		appendFile(t, path, next(2))
		scan(ts2)
		ts2.srv.Broker().Settle()
		got := dshIDs(t, ts2.eng, "sess-live")
		s, err := dsh.ReadFile(path)
		require.NoError(t, err)
		require.Len(t, got, len(s.Events), "got %d distinct ids, want %d", len(got), len(s.Events))
		for _, ev := range s.Events {
			assert.EqualValues(t, 1, got[ev.ID], "event %s is in the log %d times, want exactly once", ev.ID, got[ev.ID])
		}
		require.Equal(t, s.End, savedOffset(t, root, path), "the saved cursor is not at the end of the last frame")
	})
	t.Run("NewGeneration", func(t *testing.T) {
		ts3 := startServer(t, root, opts)
		// The host switches to a newer format generation: the same
		// session, rewritten; only new ids are appended.
		path2 := filepath.Join(dir, "session.v2.jsonl.zstd")
		before := scan(ts3)
		b, _ := os.ReadFile(path)
		appendFile(t, path2, b)
		appendFile(t, path2, next(1))
		n := scan(ts3)
		require.Equal(t, before+1, n, "got %d events, want %d: only the new one of the new generation", n, before+1)
	})
	// The host's files were only read.
	_, err := os.Stat(filepath.Join(dir, ".session.jsonl.zstd.tmp"))
	require.Error(t, err, "the watcher wrote into the host's directory")
	ents, _ := os.ReadDir(dir)
	require.Len(t, ents, 2, "host dir holds %d files, want the host's 2", len(ents))
}

// savedOffset is where dsh-watch.json, the watcher's on-disk cursor, says
// the watcher left path.
func savedOffset(t *testing.T, root, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, importer.WatchCursorFile))
	require.NoError(t, err)
	var cur struct {
		Files map[string]int64 `json:"files"`
	}
	require.NoError(t, json.Unmarshal(b, &cur))
	return cur.Files[path]
}
