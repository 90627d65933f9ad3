package events

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func segmentSeeds(f *testing.F) {
	f.Helper()
	err := filepath.Walk(goldenDir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, segmentSuffix) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f.Add(b)
		return nil
	})
	require.NoError(f, err)
	f.Add([]byte{})
}

// FuzzReader feeds arbitrary bytes to the segment reader. It must never
// panic, must always make progress, and must never yield a batch whose
// data frame does not match its checksum.
func FuzzReader(f *testing.F) {
	segmentSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		r.Header()
		prevEnd := int64(-1)
		for i := 0; ; i++ {
			if i > len(data)+2 {
				t.Fatal("reader does not make progress")
			}
			b, err := r.Next()
			if err == io.EOF || errors.Is(err, ErrTornTail) {
				return
			}
			var ce *CorruptError
			if errors.As(err, &ce) {
				continue
			}
			if err != nil {
				t.Fatalf("unexpected error type: %v", err)
			}
			if b.Offset <= prevEnd-1 || b.End > int64(len(data)) || b.Offset+recordFrameSize > b.End {
				t.Fatalf("batch [%d,%d) out of order or out of bounds (len %d, previous end %d)", b.Offset, b.End, len(data), prevEnd)
			}
			prevEnd = b.End
			rl, ok := recordLen(data[b.Offset:])
			if !ok || b.Offset+int64(rl) > b.End {
				t.Fatalf("yielded a batch at %d that does not start with a record frame", b.Offset)
			}
			h, kind, perr := parseRecord(data[b.Offset : b.Offset+int64(rl)])
			frame := data[b.Offset+int64(rl) : b.End]
			if perr != nil || kind != kindBatch || h != b.Header || sha256.Sum256(frame) != h.Checksum {
				t.Fatalf("yielded a batch at %d whose header or checksum does not verify", b.Offset)
			}
			if _, err := sharedDecoder().DecodeAll(frame, nil); err != nil {
				t.Fatalf("yielded a batch at %d whose zstd frame does not decode: %v", b.Offset, err)
			}
			if len(b.Events) != int(h.Count) {
				t.Fatalf("batch at %d: got %d events, header says %d", b.Offset, len(b.Events), h.Count)
			}
		}
	})
}

// FuzzUnmarshal feeds arbitrary lines to the envelope decoder: it must
// not panic, and what it accepts must survive Marshal and Unmarshal.
func FuzzUnmarshal(f *testing.F) {
	b, err := os.ReadFile(filepath.Join(goldenDir, "expected.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		f.Add(line)
	}
	f.Add([]byte(`{"v":0}`))
	f.Add([]byte(`{"v":2,"id":"x"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := Unmarshal(line)
		if err != nil {
			return
		}
		out, err := Marshal(&e)
		if err != nil {
			// Data that encoding/json accepted as raw but cannot re-emit.
			return
		}
		e2, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("Unmarshal(Marshal(%q)): %v", line, err)
		}
		out2, _ := Marshal(&e2)
		if !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the line: %s then %s", out, out2)
		}
	})
}
