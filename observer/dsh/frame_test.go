package dsh

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"dshmem/observer/dsh/dshtest"
)

// skippableFrame is a skippable frame (RFC 8878 §3.1.2) holding payload.
func skippableFrame(payload []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, skippableMagic|0x7)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// hostHeader is the magic and frame header the host writes, before any block.
func hostHeader() []byte {
	return append(bytes.Clone(frameMagicBytes), dshtest.HostFHD, dshtest.HostWindow)
}

// blockHeader is a 3-byte block header: last bit, type, size.
func blockHeader(last bool, typ, size int) []byte {
	h := uint32(size)<<3 | uint32(typ)<<1
	if last {
		h |= 1
	}
	return []byte{byte(h), byte(h >> 8), byte(h >> 16)}
}

// TestParseFrame holds parseFrame to the package documentation: what ends
// a frame, which frames are refused and why.
func TestParseFrame(t *testing.T) {
	host, err := dshtest.EncodeFrame([]byte("{\"type\":\"session\",\"id\":\"s\"}\n"))
	require.NoError(t, err)
	noCRC, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(false))
	require.NoError(t, err)
	defer noCRC.Close()
	reserved := bytes.Clone(host)
	reserved[4] |= 1 << 3
	rle := func(blocks int) []byte { // blocks of 128 KiB RLE, none last
		b := hostHeader()
		for range blocks {
			b = append(append(b, blockHeader(false, 1, maxBlockSize)...), 'x')
		}
		return b
	}
	for _, c := range []struct {
		name    string
		b       []byte
		wantN   int
		skip    bool
		wantErr string // substring; errShort's text for a short frame
	}{
		{name: "OK", b: host, wantN: len(host)},
		{name: "OKFollowedByMore", b: append(bytes.Clone(host), host...), wantN: len(host)},
		{name: "Skippable", b: skippableFrame([]byte("hello")), wantN: 13, skip: true},
		{name: "ErrShortSkippable", b: skippableFrame([]byte("hello"))[:10], wantErr: errShort.Error()},
		{name: "ErrShortChecksum", b: host[:len(host)-1], wantErr: errShort.Error()},
		{name: "ErrShortMagic", b: host[:3], wantErr: errShort.Error()},
		{name: "BadMagic", b: []byte("{\"type\":\"session\"}"), wantErr: "bad frame magic"},
		{name: "NoChecksum", b: noCRC.EncodeAll([]byte("{}\n"), nil), wantErr: "no content checksum"},
		{name: "ReservedBit", b: reserved, wantErr: "reserved bit"},
		{name: "ReservedBlockType", b: append(hostHeader(), blockHeader(true, 3, 1)...), wantErr: "reserved block type"},
		{name: "BlockTooBig", b: append(hostHeader(), blockHeader(true, 0, maxBlockSize+1)...), wantErr: "exceeds"},
		{name: "FrameLimit", b: rle(maxFrameContent/maxBlockSize + 1), wantErr: "frame limit"},
		{name: "ErrShortUnderLimit", b: rle(maxFrameContent / maxBlockSize), wantErr: errShort.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, err := parseFrame(c.b)
			if c.wantErr != "" {
				require.Error(t, err, "got %+v, %v; want error %q", fs, err, c.wantErr)
				require.Contains(t, err.Error(), c.wantErr, "got %+v, %v; want error %q", fs, err, c.wantErr)
				if c.wantErr == errShort.Error() && !errors.Is(err, errShort) {
					t.Fatalf("got %v, want errShort", err)
				}
				return
			}
			require.NoError(t, err, "got %+v, %v; want n=%d skippable=%v", fs, err, c.wantN, c.skip)
			require.Equal(t, c.wantN, fs.n, "got %+v, %v; want n=%d skippable=%v", fs, err, c.wantN, c.skip)
			require.Equal(t, c.skip, fs.skippable, "got %+v, %v; want n=%d skippable=%v", fs, err, c.wantN, c.skip)
		})
	}
}

// TestSkippableFramesSteppedOver: skippable frames anywhere in a log change
// nothing that is read, and are not counted as frames.
func TestSkippableFramesSteppedOver(t *testing.T) {
	dir := t.TempDir()
	lines := fixtureLines(t, filepath.Join(fixtureDir, "advanced-toolchain--session.jsonl"))
	_, b := writeZstdFile(t, dir, "ref--session.jsonl.zstd", lines, 4)
	ref, err := decodeSession("x.jsonl.zstd", b)
	require.NoError(t, err)
	starts := frameStarts(t, b)
	skip := skippableFrame([]byte("not a host frame"))
	var withSkips []byte
	for i := 0; i+1 < len(starts); i++ {
		withSkips = append(withSkips, skip...)
		withSkips = append(withSkips, b[starts[i]:starts[i+1]]...)
	}
	withSkips = append(withSkips, skip...)
	got, err := decodeSession("x.jsonl.zstd", withSkips)
	require.NoError(t, err)
	sameEnvelopes(t, got.Events, ref.Events)
	assert.False(t, got.Stats.Frames != ref.Stats.Frames || got.TornBytes != 0 || got.End != int64(len(withSkips)-len(skip)), "got %d frames, torn %d, end %d; want %d, 0, %d", got.Stats.Frames, got.TornBytes, got.End, ref.Stats.Frames, len(withSkips)-len(skip))
}

// TestNoChecksumFrameNotRead: a frame without a content checksum is never
// decoded; as the last frame it is the tail, before a good frame it is
// corruption.
func TestNoChecksumFrameNotRead(t *testing.T) {
	lines := fixtureLines(t, filepath.Join(fixtureDir, "advanced-toolchain--session.jsonl"))
	var buf bytes.Buffer
	require.NoError(t, dshtest.WriteZstd(&buf, lines, 4))
	good := buf.Bytes()
	noCRC, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(false))
	require.NoError(t, err)
	defer noCRC.Close()
	bad := noCRC.EncodeAll([]byte(`{"type":"user/message","seq":999,"time":1,"data":{}}`+"\n"), nil)

	t.Run("Tail", func(t *testing.T) {
		s, err := decodeSession("x.jsonl.zstd", append(bytes.Clone(good), bad...))
		require.NoError(t, err, "got torn %d (%q), err %v; want the frame as a %d-byte tail", s.TornBytes, s.TailReason, err, len(bad))
		require.Equal(t, int64(len(bad)), s.TornBytes, "got torn %d (%q), err %v; want the frame as a %d-byte tail", s.TornBytes, s.TailReason, err, len(bad))
		require.Contains(t, s.TailReason, "no content checksum", "got torn %d (%q), err %v; want the frame as a %d-byte tail", s.TornBytes, s.TailReason, err, len(bad))
	})
	t.Run("CorruptError", func(t *testing.T) {
		frame, err := dshtest.EncodeFrame([]byte(`{"type":"turn/start","seq":1000,"time":1,"data":{}}` + "\n"))
		require.NoError(t, err)
		damaged := append(append(bytes.Clone(good), bad...), frame...)
		_, err = decodeSession("x.jsonl.zstd", damaged)
		var ce *CorruptError
		require.True(t, errors.As(err, &ce), "got %v, want *CorruptError at %d", err, len(good))
		require.Equal(t, int64(len(good)), ce.Offset, "got %v, want *CorruptError at %d", err, len(good))
	})
}
