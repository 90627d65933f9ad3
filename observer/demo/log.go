package demo

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"dshmem/events"
	"dshmem/events/payload"
)

// decompressedLog returns every event line of every segment below dir.
func decompressedLog(dir string) ([]byte, error) {
	var out bytes.Buffer
	segs, err := filepath.Glob(filepath.Join(dir, "*", "*.jsonl.zst"))
	if err != nil {
		return nil, err
	}
	for _, s := range segs {
		f, err := os.Open(s)
		if err != nil {
			return nil, err
		}
		r := events.NewReader(f)
		for {
			b, err := r.Next()
			if err != nil {
				break
			}
			for _, e := range b.Events {
				line, _ := events.Marshal(&e)
				out.Write(line)
				out.WriteByte('\n')
			}
		}
		f.Close()
	}
	return out.Bytes(), nil
}

func lastSegment(dir string) (string, error) {
	segs, err := filepath.Glob(filepath.Join(dir, "*.jsonl.zst"))
	if err != nil || len(segs) == 0 {
		return "", fmt.Errorf("no segment in %s", dir)
	}
	return segs[len(segs)-1], nil
}

// tearLastBatch truncates seg in the middle of its last batch, as a
// crash between write and fsync can leave it, and returns the new size.
func tearLastBatch(seg string) (int64, error) {
	f, err := os.Open(seg)
	if err != nil {
		return 0, err
	}
	var last events.Batch
	r := events.NewReader(f)
	for {
		b, err := r.Next()
		if err != nil {
			break
		}
		last = b
	}
	f.Close()
	if last.End == 0 {
		return 0, fmt.Errorf("no batch in %s", seg)
	}
	cut := last.Offset + (last.End-last.Offset)/2
	return cut, os.Truncate(seg, cut)
}

// hostUserMessages counts the user messages of every stream imported
// from host logs (ids "dsh:…"): those a person typed, and those a plugin
// or the host injected.
func hostUserMessages(l *events.Log) (typed, injected int, err error) {
	for _, stream := range l.Streams() {
		err := l.Scan(stream, 0, func(e events.Envelope) error {
			if e.Type != events.TypeUserMessage || !strings.HasPrefix(e.ID, "dsh:") {
				return nil
			}
			var d payload.UserMessage
			if err := payload.Unmarshal(e.Data, &d); err != nil {
				return fmt.Errorf("read event %s: %w", e.ID, err)
			}
			if d.Injected {
				injected++
			} else {
				typed++
			}
			return nil
		})
		if err != nil {
			return 0, 0, fmt.Errorf("count user messages of %s: %w", stream, err)
		}
	}
	return typed, injected, nil
}
