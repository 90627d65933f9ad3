package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/observer"
)

// TestServeFindsCorruptionOpenTrusts: a data frame damaged inside a
// sealed segment does not stop open (the segment is trusted by its
// seal), but serve's background walk finds it and healthz names the
// segment; a read of the stream never serves the damaged batch.
func TestServeFindsCorruptionOpenTrusts(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	eng, err := observer.Open(ctx, root, observer.Options{Log: events.Options{SegmentSize: 2048}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		line := fmt.Sprintf(`{"id":"c%d","type":"user/message","time":"2026-08-18T10:00:%02dZ","data":{"text":"message number %d of the corruption test"}}`, i, i, i)
		if _, _, err := eng.Ingest(ctx, [][]byte{[]byte(line)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(root, observer.LogDir, "global", "*.jsonl.zst"))
	sort.Strings(segs)
	if len(segs) < 2 {
		t.Fatalf("got %d segments, want ≥ 2 (the first sealed)", len(segs))
	}
	b, _ := os.ReadFile(segs[0])
	b[len(b)/2] ^= 0x40 // inside a batch of the sealed segment
	os.WriteFile(segs[0], b, 0o644)

	ts := startServer(t, root, ServerOptions{})
	var h Health
	for deadline := time.Now().Add(time.Minute); ; {
		_, body := ts.call("GET", "/v1/healthz", nil)
		if err := json.Unmarshal(body, &h); err != nil {
			t.Fatal(err)
		}
		if h.Log != nil && h.Log.State != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthz never reported the end of the log walk: %s", body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if h.Log.State != "corrupt" || len(h.Log.Problems) == 0 || !strings.Contains(h.Log.Problems[0], segs[0]) {
		t.Fatalf("got log check %+v, want corrupt naming %s", h.Log, segs[0])
	}
	served := 0
	err = ts.eng.Log().Scan("global", 1, func(events.Envelope) error { served++; return nil })
	var ce *events.CorruptError
	if !errors.As(err, &ce) || ce.Segment != segs[0] || served >= 40 {
		t.Fatalf("scan: got %v after %d events, want a *CorruptError in %s before the end", err, served, segs[0])
	}
}
