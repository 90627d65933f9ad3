package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/observer"

	"github.com/stretchr/testify/require"
)

// TestServeFindsCorruptionOpenTrusts: a data frame damaged inside a
// sealed segment does not stop open (the segment is trusted by its
// seal), but serve's background walk finds it and healthz names the
// segment; a read of the stream never serves the damaged batch.
func TestServeFindsCorruptionOpenTrusts(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	eng, err := observer.Open(ctx, root, observer.Options{Log: events.Options{SegmentSize: 2048}})
	require.NoError(t, err)
	for i := 0; i < 40; i++ {
		line := fmt.Sprintf(`{"id":"c%d","type":"user/message","time":"2026-08-18T10:00:%02dZ","data":{"text":"message number %d of the corruption test"}}`, i, i, i)
		_, _, err := eng.Ingest(ctx, [][]byte{[]byte(line)})
		require.NoError(t, err)
	}
	require.NoError(t, eng.Close())
	segs, _ := filepath.Glob(filepath.Join(root, observer.LogDir, "global", "*.jsonl.zst"))
	sort.Strings(segs)
	require.False(t, len(segs) < 2, "got %d segments, want ≥ 2 (the first sealed)", len(segs))
	b, _ := os.ReadFile(segs[0])
	b[len(b)/2] ^= 0x40 // inside a batch of the sealed segment
	os.WriteFile(segs[0], b, 0o644)

	ts := startServer(t, root, ServerOptions{})
	var h Health
	for deadline := time.Now().Add(time.Minute); ; {
		_, body := ts.call("GET", "/v1/healthz", nil)
		require.NoError(t, json.Unmarshal(body, &h))
		if h.Log != nil && h.Log.State != "running" {
			break
		}
		require.False(t, time.Now().After(deadline), "healthz never reported the end of the log walk: %s", body)
		time.Sleep(5 * time.Millisecond)
	}
	require.EqualValues(t, "corrupt", h.Log.State, "got log check %+v, want corrupt naming %s", h.Log, segs[0])
	require.NotEqualValues(t, 0, len(h.Log.Problems), "got log check %+v, want corrupt naming %s", h.Log, segs[0])
	require.Contains(t, h.Log.Problems[0], segs[0], "got log check %+v, want corrupt naming %s", h.Log, segs[0])
	served := 0
	err = ts.eng.Log().Scan("global", 1, func(events.Envelope) error { served++; return nil })
	var ce *events.CorruptError
	require.True(t, errors.As(err, &ce), "scan: got %v after %d events, want a *CorruptError in %s before the end", err, served, segs[0])
	require.Equal(t, segs[0], ce.Segment, "scan: got %v after %d events, want a *CorruptError in %s before the end", err, served, segs[0])
	require.False(t, served >= 40, "scan: got %v after %d events, want a *CorruptError in %s before the end", err, served, segs[0])
}
