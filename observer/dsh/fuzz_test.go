package dsh

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/observer/dsh/dshtest"

	"github.com/stretchr/testify/require"
)

// zstdSeeds are host-framed logs: the real capture, every fixture
// re-encoded, and cut and damaged variants.
func zstdSeeds(f *testing.F) [][]byte {
	f.Helper()
	live, err := os.ReadFile(livePath)
	require.NoError(f, err)
	seeds := [][]byte{live, live[:len(live)/2], live[:200]}
	paths, _ := filepath.Glob(filepath.Join(fixtureDir, "*--session*.jsonl"))
	for _, p := range paths {
		var buf bytes.Buffer
		require.NoError(f, dshtest.WriteZstd(&buf, fixtureLines(f, p), 16))
		b := buf.Bytes()
		bad := bytes.Clone(b)
		bad[len(bad)/3] ^= 0x20
		seeds = append(seeds, b, b[:len(b)-7], bad)
	}
	return seeds
}

// FuzzSplitZstd: no panic, and every frame the splitter returns carries a
// content checksum that an independent XXH64 confirms over exactly the
// content returned — no event can come from a frame that fails its check.
func FuzzSplitZstd(f *testing.F) {
	for _, s := range zstdSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		chunks, tl, err := splitZstd("fuzz", data, 100)
		prevEnd := int64(100)
		for _, c := range chunks {
			if c.Off < prevEnd || c.End <= c.Off || c.End > 100+int64(len(data)) {
				t.Fatalf("chunk [%d,%d) out of order or bounds (prev end %d, len %d)", c.Off, c.End, prevEnd, len(data))
			}
			frame := data[c.Off-100 : c.End-100]
			if !checksumMatches(frame, c.raw) {
				t.Fatalf("chunk at %d returned with a checksum that does not match its content", c.Off)
			}
			if got, want := c.Lines, splitLines(c.raw); len(got) != len(want) {
				t.Fatalf("lines: got %d, want %d", len(got), len(want))
			}
			prevEnd = c.End
		}
		if tl.Bytes < 0 || tl.Bytes > int64(len(data)) {
			t.Fatalf("tail %d of %d bytes", tl.Bytes, len(data))
		}
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Offset < prevEnd || ce.Offset >= 100+int64(len(data)) {
				t.Fatalf("got %v, want *CorruptError after the last chunk", err)
			}
		}
	})
}

// FuzzSplitJSONL: no panic; every line returned is one JSON object.
func FuzzSplitJSONL(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtureDir, "*--session*.jsonl"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 4096)])
	}
	f.Add([]byte("{\"type\":\"session\",\"id\":\"x\"}\n\n  \n{\"a\":"))
	f.Add([]byte("{}\nnot json\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		chunks, tl, err := splitJSONL("fuzz", data, 0)
		prevEnd := int64(0)
		for _, c := range chunks {
			if c.Off != prevEnd || c.End <= c.Off || c.End > int64(len(data)) {
				t.Fatalf("chunk [%d,%d) not contiguous (prev end %d)", c.Off, c.End, prevEnd)
			}
			for _, l := range c.Lines {
				var v map[string]any
				if json.Unmarshal(l, &v) != nil {
					t.Fatalf("line %q is not a JSON object", l)
				}
			}
			prevEnd = c.End
		}
		if err == nil && prevEnd+tl.Bytes != int64(len(data)) {
			t.Fatalf("chunks end %d + tail %d != %d", prevEnd, tl.Bytes, len(data))
		}
	})
}

// FuzzDecodeSession runs the whole reader (framing and mapping) on
// arbitrary bytes of both formats.
func FuzzDecodeSession(f *testing.F) {
	for _, s := range zstdSeeds(f) {
		f.Add(s, true)
	}
	b, err := os.ReadFile(filepath.Join(fixtureDir, "subagent-continuable--session.1.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, false)
	f.Fuzz(func(t *testing.T, data []byte, zstd bool) {
		name := "f--session.jsonl"
		if zstd {
			name += ".zstd"
		}
		s, err := decodeSession(name, data)
		if err != nil {
			return
		}
		for _, e := range s.Events {
			if !strings.HasPrefix(e.ID, "dsh:"+s.ID+":") || e.Session != s.ID || !json.Valid(e.Data) {
				t.Fatalf("bad envelope %s", envKey(e))
			}
		}
	})
}
