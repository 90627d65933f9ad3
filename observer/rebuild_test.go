package observer_test

import (
	"context"
	"dshmem/observer"
	"dshmem/observer/internal/enginetest"
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
