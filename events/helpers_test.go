package events

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// testEvent returns a deterministic event of a few types, some with CJK text.
func testEvent(i int) Envelope {
	e := Envelope{
		ID:      fmt.Sprintf("test:%d", i),
		Time:    fmt.Sprintf("2026-08-18T10:%02d:%02d.%03dZ", (i/60)%60, i%60, i%1000),
		Session: "session-0001",
		Cwd:     "/home/u/proj",
	}
	var data any
	switch i % 4 {
	case 0:
		e.Type = TypeUserMessage
		data = map[string]any{"text": fmt.Sprintf("修复DSH的记忆注入问题 #%d — please keep <html> & \"quotes\"", i)}
	case 1:
		e.Type = TypeAssistantMessage
		data = map[string]any{"text": fmt.Sprintf("I will look at the injection broker, step %d.", i)}
	case 2:
		e.Type = TypeToolCall
		data = map[string]any{"name": "grep", "args": map[string]any{"pattern": "记忆", "n": i}}
	default:
		e.Type = TypeMemoryRemember
		e.Session, e.Cwd = "", ""
		data = map[string]any{"content": fmt.Sprintf("我们的记忆注入逻辑需要修复 %d", i), "importance": i % 4}
	}
	e.Data, _ = json.Marshal(data)
	return e
}

func testEvents(from, n int) []Envelope {
	evs := make([]Envelope, n)
	for i := range evs {
		evs[i] = testEvent(from + i)
	}
	return evs
}

func openLog(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l, err := OpenLog(dir, opts)
	require.NoError(t, err, "OpenLog(%s)", dir)
	t.Cleanup(func() { l.Close() })
	return l
}

func mustAppend(t testing.TB, l *Log, stream string, evs []Envelope) []Envelope {
	t.Helper()
	got, err := l.Append(context.Background(), stream, evs)
	require.NoError(t, err, "Append(%s, %d events)", stream, len(evs))
	return got
}

func scanAll(t testing.TB, l *Log, stream string, from uint64) []Envelope {
	t.Helper()
	var evs []Envelope
	require.NoError(t, l.Scan(stream, from, func(e Envelope) error {
		evs = append(evs, e)
		return nil
	}), "Scan(%s, %d)", stream, from)
	return evs
}

// segmentPaths lists the segment files of a stream, in order.
func segmentPaths(t testing.TB, dir, stream string) []string {
	t.Helper()
	segs, err := listSegments(OSFS{}, filepath.Join(dir, stream))
	require.NoError(t, err)
	paths := make([]string, len(segs))
	for i, s := range segs {
		paths[i] = s.path
	}
	return paths
}

// readBatches reads every batch of a segment file; it fails the test on
// any error but io.EOF.
func readBatches(t testing.TB, path string) []Batch {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := NewReader(f)
	var bs []Batch
	for {
		b, err := r.Next()
		if err == io.EOF {
			return bs
		}
		require.NoError(t, err, "read %s", path)
		b.Lines = nil
		bs = append(bs, b)
	}
}

// copyDir copies a directory tree.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	require.NoError(t, err)
}

func marshalLine(t testing.TB, e Envelope) string {
	t.Helper()
	b, err := Marshal(&e)
	require.NoError(t, err)
	return string(b)
}

// checkEvents compares events by their marshalled lines.
func checkEvents(t testing.TB, got, want []Envelope) {
	t.Helper()
	require.Len(t, got, len(want), "got %d events, want %d", len(got), len(want))
	for i := range got {
		g, w := marshalLine(t, got[i]), marshalLine(t, want[i])
		require.Equal(t, w, g, "event %d: got %s, want %s", i, g, w)
	}
}
