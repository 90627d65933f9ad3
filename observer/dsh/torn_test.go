package dsh

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"dshmem/observer/dsh/dshtest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTornAndCorrupt cuts and damages a host-framed log.
func TestTornAndCorrupt(t *testing.T) {
	dir := t.TempDir()
	lines := fixtureLines(t, filepath.Join(fixtureDir, "advanced-toolchain--session.jsonl"))
	full, b := writeZstdFile(t, dir, "full--session.jsonl.zstd", lines, 8)
	starts := frameStarts(t, b)
	nFrames := len(starts) - 1
	last := starts[nFrames-1]

	// What a reader must return for the log without its last frame.
	prefix, err := ReadFile(writeRaw(t, dir, "prefix--session.jsonl.zstd", b[:last]))
	require.NoError(t, err)

	t.Run("TornLastFrame", func(t *testing.T) {
		cut := last + (int64(len(b))-last)/2
		s, err := ReadFile(writeRaw(t, dir, "torn--session.jsonl.zstd", b[:cut]))
		require.NoError(t, err, "got %v, want no error", err)
		sameEnvelopes(t, s.Events, prefix.Events)
		assert.False(t, s.TornBytes != cut-last || s.End != last || s.Stats.TornBytes != cut-last, "got torn %d end %d, want torn %d end %d", s.TornBytes, s.End, cut-last, last)
	})
	t.Run("BadChecksumLastFrame", func(t *testing.T) {
		// A whole last frame that fails its checksum: nothing valid follows, so
		// it is the tail (a torn write), not decoded.
		bad := bytes.Clone(b)
		bad[len(bad)-1] ^= 0x40
		s, err := ReadFile(writeRaw(t, dir, "badsum--session.jsonl.zstd", bad))
		require.NoError(t, err, "got %v, want no error", err)
		sameEnvelopes(t, s.Events, prefix.Events)
		assert.Equal(t, int64(len(b))-last, s.TornBytes, "got torn %d, want %d", s.TornBytes, int64(len(b))-last)
	})
	t.Run("CorruptError", func(t *testing.T) {
		k := nFrames / 2
		for _, pos := range []int64{starts[k] + 1, (starts[k] + starts[k+1]) / 2, starts[k+1] - 1} {
			bad := bytes.Clone(b)
			bad[pos] ^= 0x01
			p := writeRaw(t, dir, "corrupt--session.jsonl.zstd", bad)
			_, err := ReadFile(p)
			var ce *CorruptError
			require.True(t, errors.As(err, &ce), "flip at %d: got %v, want *CorruptError", pos, err)
			assert.False(t, ce.Offset != starts[k] || ce.Path != p, "flip at %d: got offset %d path %s, want offset %d path %s", pos, ce.Offset, ce.Path, starts[k], p)
		}
	})
	t.Run("OK", func(t *testing.T) {
		s, err := ReadFile(full)
		require.NoError(t, err, "got torn %d end %d err %v", s.TornBytes, s.End, err)
		require.EqualValues(t, 0, s.TornBytes, "got torn %d end %d err %v", s.TornBytes, s.End, err)
		require.Equal(t, int64(len(b)), s.End, "got torn %d end %d err %v", s.TornBytes, s.End, err)
	})
}

func TestTornJSONL(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(fixtureDir, "compaction-recovery--session.jsonl")
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	lastNL := int64(bytes.LastIndexByte(b[:len(b)-1], '\n') + 1)
	prefix, err := ReadFile(writeRaw(t, dir, "p--session.jsonl", b[:lastNL]))
	require.NoError(t, err)
	t.Run("TornLastLine", func(t *testing.T) {
		cut := lastNL + 10
		s, err := ReadFile(writeRaw(t, dir, "t--session.jsonl", b[:cut]))
		require.NoError(t, err)
		sameEnvelopes(t, s.Events, prefix.Events)
		assert.False(t, s.TornBytes != 10 || s.End != lastNL, "got torn %d end %d, want 10 %d", s.TornBytes, s.End, lastNL)
	})
	t.Run("CorruptError", func(t *testing.T) {
		bad := bytes.Clone(b)
		mid := bytes.Index(bad, []byte(`{"type": "tool/call"`))
		if mid < 0 {
			mid = bytes.Index(bad, []byte(`{"type":"tool/call"`))
		}
		bad[mid] = 'X'
		_, err := ReadFile(writeRaw(t, dir, "c--session.jsonl", bad))
		var ce *CorruptError
		require.True(t, errors.As(err, &ce), "got %v, want *CorruptError at %d", err, mid)
		require.Equal(t, int64(mid), ce.Offset, "got %v, want *CorruptError at %d", err, mid)
	})
}

// TestFlipEveryByte damages each byte of the real host log in turn: a
// reader may fail with a *CorruptError or stop early at a torn tail, but
// every envelope it returns must be one the undamaged log produces, in
// order: nothing from a frame that failed its checksum.
func TestFlipEveryByte(t *testing.T) {
	b, ref := liveSession(t)
	want := make([]string, len(ref.Events))
	for i, e := range ref.Events {
		want[i] = envKey(e)
	}
	for pos := range b {
		bad := bytes.Clone(b)
		bad[pos] ^= 0x10
		s, err := decodeSession("x.jsonl.zstd", bad)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) && !errors.Is(err, ErrNoHeader) && !errors.Is(err, ErrNotSession) {
				t.Fatalf("flip %d: unexpected error %v", pos, err)
			}
			continue
		}
		require.False(t, len(s.Events) > len(want), "flip %d: %d events, more than %d", pos, len(s.Events), len(want))
		for i, e := range s.Events {
			require.Equal(t, want[i], envKey(e), "flip %d: event %d differs:\ngot  %s\nwant %s", pos, i, envKey(e), want[i])
		}
		if len(s.Events) < len(want) && s.TornBytes == 0 {
			t.Fatalf("flip %d: events lost without a torn tail", pos)
		}
	}
}

func TestChecksumHelper(t *testing.T) {
	b, err := os.ReadFile(livePath)
	require.NoError(t, err)
	chunks, _, err := splitZstd("live", b, 0)
	require.NoError(t, err, "got %d frames, err %v; want 9", len(chunks), err)
	require.Len(t, chunks, 9, "got %d frames, err %v; want 9", len(chunks), err)
	for _, c := range chunks {
		require.True(t, checksumMatches(b[c.Off:c.End], c.raw), "frame at %d: xxh64 helper disagrees with the host's checksum", c.Off)
	}
	// The encoder writes the host's frame header byte for byte.
	frame, err := dshtest.EncodeFrame([]byte("{}\n"))
	require.NoError(t, err)
	assert.Equal(t, b[:6], frame[:6], "header: got % x, want % x", frame[:6], b[:6])
}

func writeRaw(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}
