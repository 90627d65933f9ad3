package observer_test

import (
	"context"
	"dshmem/observer"
	"dshmem/observer/internal/enginetest"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLiveIndexEqualsRebuild ingests data that JSON encoders like to
// rewrite — HTML characters, pretty-printed objects, escapes, CJK — and
// checks that the index folded live equals one folded from the log.
func TestLiveIndexEqualsRebuild(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	eng, err := observer.Open(ctx, root, observer.Options{})
	require.NoError(t, err)
	defer eng.Close()
	lines := [][]byte{
		[]byte(`{"id":"a","type":"user/message","time":"2026-08-18T10:00:00Z","session":"s","cwd":"/p","data":{"text":"if a < b && c > d { return \"<ok>\" }"}}`),
		[]byte(`{"id":"b","type":"tool/call","time":"2026-08-18T10:00:01Z","session":"s","data":{ "name" : "bash",  "args": {"cmd": "echo 'x' > /tmp/y\u0026\u0026 ls"} }}`),
		[]byte(`{"id":"c","type":"assistant/message","time":"2026-08-18T10:00:02+08:00","session":"s","data":{"text":"记忆注入 \u2028 line\tsep \ud83d\ude00"}}`),
		[]byte(`{"id":"d","type":"memory/remember","time":"2026-08-18T10:00:03Z","cwd":"/p","data":{"content":"Use <b>pnpm</b> & never npm","tags":["a&b"],"importance":2}}`),
	}
	res, outs, err := eng.Ingest(ctx, lines)
	require.NoError(t, err)
	require.Equal(t, len(lines), res.Appended, "appended %d, want %d: %+v", res.Appended, len(lines), outs)
	segs, _ := filepath.Glob(filepath.Join(root, observer.LogDir, "*", "*.jsonl.zst"))
	raw, err := exec.Command("zstd", "-dc", segs[0]).Output()
	require.NoError(t, err, "zstd -dc")
	require.Contains(t, string(raw), string([]byte(`a < b && c > d`)), "the log escaped the text instead of keeping it:\n%s", raw)
	live, fresh := enginetest.IndexDumps(t, eng)
	require.Equal(t, fresh, live, "live index differs from a rebuild of the log:\nlive:\n%s\nfresh:\n%s", live, fresh)
}

// TestIndexAheadIsRebuilt: an index that folded events the log no longer
// holds (its last batches cut out by hand, or a log restored from an
// older copy) is dropped and rebuilt on open; what is ingested next gets
// the seqs after the log's end and is folded, not skipped.
func TestIndexAheadIsRebuilt(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	ingest := func(eng *observer.Engine, from, n int) {
		t.Helper()
		var lines [][]byte
		for i := from; i < from+n; i++ {
			lines = append(lines, []byte(fmt.Sprintf(`{"id":"ahead:%d","type":"user/message","time":"2026-08-18T10:00:00Z","session":"s","cwd":"/p","data":{"text":"message %d about the walrus"}}`, i, i)))
		}
		res, _, err := eng.Ingest(ctx, lines)
		require.NoError(t, err)
		require.Equal(t, n, res.Appended)
	}
	eng, err := observer.Open(ctx, root, observer.Options{})
	require.NoError(t, err)
	ingest(eng, 0, 10)
	require.NoError(t, eng.Close())
	older := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.CopyFS(older, os.DirFS(filepath.Join(root, observer.LogDir))))

	eng, err = observer.Open(ctx, root, observer.Options{})
	require.NoError(t, err)
	ingest(eng, 10, 10)
	require.NoError(t, eng.Close())
	// The log goes back to its first 10 events; the index saw 20.
	require.NoError(t, os.RemoveAll(filepath.Join(root, observer.LogDir)))
	require.NoError(t, os.CopyFS(filepath.Join(root, observer.LogDir), os.DirFS(older)))

	eng, err = observer.Open(ctx, root, observer.Options{})
	require.NoError(t, err)
	defer eng.Close()
	require.NotEmpty(t, eng.Rebuilt(), "an index ahead of the log was kept")
	ingest(eng, 100, 5)
	live, fresh := enginetest.IndexDumps(t, eng)
	require.Equal(t, fresh, live, "after the rebuild and 5 more events the index differs from a fold of the log")
	st, err := eng.IndexStats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 15, st.Events, "the index holds %d events, want the log's 10 and the 5 new", st.Events)
}
