package dsh

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"os"
	"path/filepath"
	"testing"

	"dshmem/events"
	"dshmem/observer/dsh/dshtest"

	"github.com/stretchr/testify/require"
)

const fixtureDir = "../../testdata/dsh-sessions"

// livePath is the log captured from the real host (testdata/dsh-sessions/live/README.md).
var livePath = filepath.Join(fixtureDir, "live", "--tmp-dshlive-proj--",
	"session-f89a0fe3-a8e2-43d3-89fc-ea47ed224b68", "session.jsonl.zstd")

// fixtureLines returns the host lines of a fixture, decoding the zstd one.
func fixtureLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	chunks, tl, err := split(path, b, 0)
	require.NoError(t, err, "split %s: tail %+v, err %v", path, tl, err)
	require.EqualValues(t, 0, tl.Bytes, "split %s: tail %+v, err %v", path, tl, err)
	var lines [][]byte
	for _, c := range chunks {
		lines = append(lines, c.Lines...)
	}
	return lines
}

// writeZstdFile encodes lines the host's way into dir/name.
func writeZstdFile(t testing.TB, dir, name string, lines [][]byte, batch int) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, dshtest.WriteZstd(&buf, lines, batch), "dshtest.WriteZstd")
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o600))
	return p, buf.Bytes()
}

// readTree reads every session FindSessions lists under root, as the
// importer does, failing the test on any error.
func readTree(t testing.TB, root string) []Session {
	t.Helper()
	paths, err := FindSessions(root)
	require.NoError(t, err)
	sessions := make([]Session, 0, len(paths))
	for _, p := range paths {
		s, err := ReadFile(p)
		require.NoError(t, err)
		sessions = append(sessions, s)
	}
	return sessions
}

func writeJSONLFile(t testing.TB, dir, name string, lines [][]byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, append(bytes.Join(lines, []byte("\n")), '\n'), 0o600))
	return p
}

// frameStarts returns the offset of every frame in a zstd log, plus len(b).
func frameStarts(t testing.TB, b []byte) []int64 {
	t.Helper()
	var offs []int64
	for off := 0; off < len(b); {
		fs, err := parseFrame(b[off:])
		require.NoError(t, err, "parseFrame at %d", off)
		offs = append(offs, int64(off))
		off += fs.n
	}
	return append(offs, int64(len(b)))
}

func envKey(e events.Envelope) string {
	b, _ := events.Marshal(&e)
	return string(b)
}

func sameEnvelopes(t testing.TB, got, want []events.Envelope) {
	t.Helper()
	require.Len(t, got, len(want), "got %d envelopes, want %d", len(got), len(want))
	for i := range got {
		g, w := envKey(got[i]), envKey(want[i])
		require.Equal(t, w, g, "envelope %d:\ngot  %s\nwant %s", i, g, w)
	}
}

// xxh64 is an independent XXH64 (seed 0) so that tests can check a zstd
// content checksum without trusting the decoder under test.
func xxh64(b []byte) uint64 {
	const (
		p1 uint64 = 11400714785074694791
		p2 uint64 = 14029467366897019727
		p3 uint64 = 1609587929392839161
		p4 uint64 = 9650029242287828579
		p5 uint64 = 2870177450012600261
	)
	round := func(acc, in uint64) uint64 { return bits.RotateLeft64(acc+in*p2, 31) * p1 }
	merge := func(acc, v uint64) uint64 { acc ^= round(0, v); return acc*p1 + p4 }
	n := uint64(len(b))
	var h uint64
	if len(b) >= 32 {
		var zero uint64 // seed 0; variables so the sums wrap at run time
		v1, v2, v3, v4 := zero+p1, zero+p2, zero, zero-p1
		v1 += p2
		for ; len(b) >= 32; b = b[32:] {
			v1 = round(v1, binary.LittleEndian.Uint64(b))
			v2 = round(v2, binary.LittleEndian.Uint64(b[8:]))
			v3 = round(v3, binary.LittleEndian.Uint64(b[16:]))
			v4 = round(v4, binary.LittleEndian.Uint64(b[24:]))
		}
		h = bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
		h = merge(merge(merge(merge(h, v1), v2), v3), v4)
	} else {
		h = p5
	}
	h += n
	for ; len(b) >= 8; b = b[8:] {
		h ^= round(0, binary.LittleEndian.Uint64(b))
		h = bits.RotateLeft64(h, 27)*p1 + p4
	}
	if len(b) >= 4 {
		h ^= uint64(binary.LittleEndian.Uint32(b)) * p1
		h = bits.RotateLeft64(h, 23)*p2 + p3
		b = b[4:]
	}
	for _, c := range b {
		h ^= uint64(c) * p5
		h = bits.RotateLeft64(h, 11) * p1
	}
	h ^= h >> 33
	h *= p2
	h ^= h >> 29
	h *= p3
	h ^= h >> 32
	return h
}

// checksumMatches reports whether frame's stored checksum is XXH64(content).
func checksumMatches(frame, content []byte) bool {
	if len(frame) < 4 {
		return false
	}
	return binary.LittleEndian.Uint32(frame[len(frame)-4:]) == uint32(xxh64(content))
}
