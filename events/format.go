package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// On-disk constants. Part of the on-disk format; do not change.
const (
	// zstdMagic starts every standard zstd frame (little endian on disk).
	zstdMagic = 0xFD2FB528
	// skippableMagic starts our skippable frames. zstd reserves
	// 0x184D2A50..0x184D2A5F for skippable frames; we use the last nibble
	// 0xD so that frames of other tools are not mistaken for ours.
	skippableMagic = 0x184D2A5D

	// recordSize is the payload length of a batch header or seal record.
	recordSize = 88
	// recordFrameSize is a whole skippable frame holding one record:
	// magic (4) + payload length (4) + payload.
	recordFrameSize = 8 + recordSize

	recordVersion = 1
	kindBatch     = 1
	kindSeal      = 2
	// kindGap: seqs that `dshmem salvage` could not keep (see doc.go,
	// "Salvage"). Part of the on-disk format; do not change.
	kindGap = 3

	// A scrubbed batch (Log.Rewrite) has a record of version 2: the
	// version 1 fields describe the rewritten frame, and 36 more bytes
	// keep the length and checksum of the frame as first written, which
	// the batch's Hash is computed from, so the chain stays as it was.
	scrubbedVersion     = 2
	scrubbedRecordSize  = recordSize + 36
	scrubbedRecordFrame = 8 + scrubbedRecordSize
	maxRecordFrameSize  = scrubbedRecordFrame

	// headerVersion is the "v" of the stream header line.
	headerVersion = 1

	segmentSuffix = ".jsonl.zst"
	brokenSuffix  = ".broken"
	seqDigits     = 20
)

// Limits that protect readers from hostile or damaged input. Changing
// them does not change the format, but a writer must stay below them.
const (
	maxHeaderFrame = 64 << 10 // compressed size of the stream header frame
	maxFrameLen    = 1 << 30  // compressed size of one batch frame
	maxDecoded     = 256 << 20
	maxEventSize   = 16 << 20 // one marshalled envelope
	maxFrameBytes  = 8 << 20  // uncompressed bytes per batch frame (unless one event is larger)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader describes the zstd frame that follows it. It is stored in a
// skippable frame right before the batch's data frame.
type BatchHeader struct {
	FirstSeq uint64   // seq of the first event in the frame
	Count    uint32   // number of events (= lines) in the frame
	Length   uint32   // compressed length of the data frame in bytes
	Checksum [32]byte // sha256 of the data frame's bytes
	Prev     [32]byte // Hash of the previous batch of the stream; zero for the first

	// Scrubbed marks a batch whose frame was rewritten by Log.Rewrite
	// (record version 2). OrigLength and OrigChecksum are the frame's
	// length and sha256 as first written: Hash is computed from them, so
	// the batches after it, the next segment's header and the seal still
	// name the batch by the hash it was appended with. The original
	// bytes are gone; what is checked of the batch is its new frame
	// (Checksum) and its place in the chain.
	Scrubbed     bool
	OrigLength   uint32
	OrigChecksum [32]byte

	// Gap marks a gap record (kind 3), written only by Salvage: seqs
	// FirstSeq..LastSeq were lost to damage and have no frame. Checksum
	// holds the hash the chain resumes at (the Prev of the batch that
	// follows); Length is zero. See Next.
	Gap bool
}

// Next is the chain hash after the record: what the next batch names as
// Prev. For a batch it is its Hash; for a gap, the hash it resumes at.
func (h BatchHeader) Next() [32]byte {
	if h.Gap {
		return h.Checksum
	}
	return h.Hash()
}

// LastSeq is the seq of the last event of the batch.
func (h BatchHeader) LastSeq() uint64 { return h.FirstSeq + uint64(h.Count) - 1 }

// Hash identifies the batch in the hash chain: sha256 over the record
// bytes that precede its CRC. Because the record holds the frame's
// checksum and the previous hash, the chain covers every event byte.
//
// A scrubbed batch keeps the Hash of the batch as first written: it is
// computed from the version 1 record of OrigLength and OrigChecksum.
func (h BatchHeader) Hash() [32]byte {
	if h.Scrubbed {
		h = h.Original()
	}
	var b [recordSize]byte
	h.put(b[:], kindBatch)
	return sha256.Sum256(b[:recordSize-4])
}

// Original is the header of the batch as first written: for a scrubbed
// batch its original length and checksum, for any other h itself.
func (h BatchHeader) Original() BatchHeader {
	if !h.Scrubbed {
		return h
	}
	return BatchHeader{FirstSeq: h.FirstSeq, Count: h.Count, Length: h.OrigLength, Checksum: h.OrigChecksum, Prev: h.Prev}
}

// recordFrameLen is the length of h's whole record frame.
func (h BatchHeader) recordFrameLen() int64 {
	if h.Scrubbed {
		return scrubbedRecordFrame
	}
	return recordFrameSize
}

// put writes the record payload (kind, version, reserved, fields, crc):
// recordSize bytes, or scrubbedRecordSize for a scrubbed batch.
func (h BatchHeader) put(b []byte, kind byte) {
	b[0] = kind
	b[1] = recordVersion
	b[2], b[3] = 0, 0
	binary.LittleEndian.PutUint64(b[4:], h.FirstSeq)
	binary.LittleEndian.PutUint32(b[12:], h.Count)
	binary.LittleEndian.PutUint32(b[16:], h.Length)
	copy(b[20:52], h.Checksum[:])
	copy(b[52:84], h.Prev[:])
	if h.Scrubbed && kind == kindBatch {
		b[1] = scrubbedVersion
		binary.LittleEndian.PutUint32(b[84:], h.OrigLength)
		copy(b[88:120], h.OrigChecksum[:])
		binary.LittleEndian.PutUint32(b[120:], crc32.Checksum(b[:120], castagnoli))
		return
	}
	binary.LittleEndian.PutUint32(b[84:], crc32.Checksum(b[:84], castagnoli))
}

// Seal closes a segment. It reuses the record layout: FirstSeq is the
// segment's first seq, Count the number of events in the segment, Length
// and Checksum are zero, Prev is the Hash of the segment's last batch.
type Seal struct {
	FirstSeq uint64
	Count    uint32
	Last     [32]byte
}

// LastSeq is the seq of the last event in the sealed segment.
func (s Seal) LastSeq() uint64 { return s.FirstSeq + uint64(s.Count) - 1 }

// appendRecord appends a skippable frame holding one record.
func appendRecord(dst []byte, h BatchHeader, kind byte) []byte {
	var b [maxRecordFrameSize]byte
	n := recordSize
	if h.Scrubbed && kind == kindBatch {
		n = scrubbedRecordSize
	}
	binary.LittleEndian.PutUint32(b[0:], skippableMagic)
	binary.LittleEndian.PutUint32(b[4:], uint32(n))
	h.put(b[8:], kind)
	return append(dst, b[:8+n]...)
}

// appendGap appends a gap record: seqs first..first+count-1 are lost;
// the chain goes on from prev (the hash before the gap) to resume.
func appendGap(dst []byte, first uint64, count uint32, prev, resume [32]byte) []byte {
	return appendRecord(dst, BatchHeader{FirstSeq: first, Count: count, Checksum: resume, Prev: prev}, kindGap)
}

func appendSeal(dst []byte, s Seal) []byte {
	return appendRecord(dst, BatchHeader{FirstSeq: s.FirstSeq, Count: s.Count, Prev: s.Last}, kindSeal)
}

var (
	errRecordMagic = errors.New("not a batch header frame")
	errRecordCRC   = errors.New("batch header crc mismatch")
	errRecordForm  = errors.New("unknown batch header version or kind")
)

// recordLen returns the length of the record frame that starts b (whose
// first 8 bytes must be there): recordFrameSize, or scrubbedRecordFrame
// for a scrubbed batch. ok is false when b does not start a record frame
// of ours.
func recordLen(b []byte) (int, bool) {
	if len(b) < 8 || binary.LittleEndian.Uint32(b[0:]) != skippableMagic {
		return 0, false
	}
	switch binary.LittleEndian.Uint32(b[4:]) {
	case recordSize:
		return recordFrameSize, true
	case scrubbedRecordSize:
		return scrubbedRecordFrame, true
	}
	return 0, false
}

// parseRecord decodes a whole record frame (recordLen(b) bytes).
func parseRecord(b []byte) (h BatchHeader, kind byte, err error) {
	n, ok := recordLen(b)
	if !ok || len(b) < n {
		return h, 0, errRecordMagic
	}
	p := b[8:n]
	crcAt := len(p) - 4
	if crc32.Checksum(p[:crcAt], castagnoli) != binary.LittleEndian.Uint32(p[crcAt:]) {
		return h, 0, errRecordCRC
	}
	kind = p[0]
	version := byte(recordVersion)
	if n == scrubbedRecordFrame {
		version = scrubbedVersion
	}
	if p[1] != version || (kind != kindBatch && kind != kindSeal && kind != kindGap) || p[2] != 0 || p[3] != 0 ||
		version == scrubbedVersion && kind != kindBatch {
		return h, 0, errRecordForm
	}
	h.FirstSeq = binary.LittleEndian.Uint64(p[4:])
	h.Count = binary.LittleEndian.Uint32(p[12:])
	h.Length = binary.LittleEndian.Uint32(p[16:])
	copy(h.Checksum[:], p[20:52])
	copy(h.Prev[:], p[52:84])
	if version == scrubbedVersion {
		h.Scrubbed = true
		h.OrigLength = binary.LittleEndian.Uint32(p[84:])
		copy(h.OrigChecksum[:], p[88:120])
		if h.OrigLength == 0 || h.OrigLength > maxFrameLen {
			return h, 0, errRecordForm
		}
	}
	if kind == kindBatch && (h.Count == 0 || h.Length == 0 || h.Length > maxFrameLen || h.FirstSeq == 0) {
		return h, 0, errRecordForm
	}
	if kind == kindGap {
		if h.Count == 0 || h.Length != 0 || h.FirstSeq == 0 {
			return h, 0, errRecordForm
		}
		h.Gap = true
	}
	return h, kind, nil
}

// StreamHeader is the single line of a segment's first frame.
type StreamHeader struct {
	Type     string `json:"type"` // always "stream"
	V        int    `json:"v"`
	Stream   string `json:"stream"`
	FirstSeq uint64 `json:"firstSeq"`
	// Prev is the hex Hash of the last batch of the previous segment of
	// the stream (64 zeros for the first segment), so the chain crosses
	// segment boundaries.
	Prev string `json:"prev"`
}

func encodeStreamHeader(stream string, firstSeq uint64, prev [32]byte) []byte {
	b, _ := json.Marshal(StreamHeader{Type: "stream", V: headerVersion, Stream: stream, FirstSeq: firstSeq, Prev: hex.EncodeToString(prev[:])})
	return append(b, '\n')
}

func decodeStreamHeader(content []byte) (StreamHeader, [32]byte, error) {
	var h StreamHeader
	var prev [32]byte
	line, rest, _ := bytes.Cut(content, []byte("\n"))
	if len(rest) != 0 {
		return h, prev, errors.New("stream header frame holds more than one line")
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, prev, fmt.Errorf("decode stream header: %w", err)
	}
	if h.Type != "stream" || h.V != headerVersion || h.FirstSeq == 0 || !ValidStream(h.Stream) {
		return h, prev, fmt.Errorf("bad stream header %q", line)
	}
	if p, err := hex.DecodeString(h.Prev); err != nil || len(p) != 32 {
		return h, prev, fmt.Errorf("bad prev hash %q in stream header", h.Prev)
	} else {
		copy(prev[:], p)
	}
	return h, prev, nil
}

// zstdFrameEnd returns the length of the standard zstd frame at the
// start of b by walking its frame and block headers, without decoding.
// It returns errShort when b ends before the frame does, so a caller can
// tell a torn frame from a malformed one. It requires the content
// checksum flag: every frame we write carries one.
func zstdFrameEnd(b []byte) (int, error) {
	if len(b) < 5 {
		return 0, errShort
	}
	if binary.LittleEndian.Uint32(b) != zstdMagic {
		return 0, errors.New("not a zstd frame")
	}
	fhd := b[4]
	if fhd&0x08 != 0 {
		return 0, errors.New("zstd frame header: reserved bit set")
	}
	if fhd&0x04 == 0 {
		return 0, errors.New("zstd frame has no content checksum")
	}
	single := fhd&0x20 != 0
	n := 5
	if !single {
		n++ // window descriptor
	}
	n += [4]int{0, 1, 2, 4}[fhd&3] // dictionary id
	switch fhd >> 6 {
	case 0:
		if single {
			n++
		}
	case 1:
		n += 2
	case 2:
		n += 4
	case 3:
		n += 8
	}
	for {
		if len(b) < n+3 {
			return 0, errShort
		}
		bh := uint32(b[n]) | uint32(b[n+1])<<8 | uint32(b[n+2])<<16
		n += 3
		last := bh&1 != 0
		size := int(bh >> 3)
		switch (bh >> 1) & 3 {
		case 0, 2: // raw, compressed
			n += size
		case 1: // RLE: one byte
			n++
		default:
			return 0, errors.New("zstd block: reserved type")
		}
		if n > maxHeaderFrame+maxFrameLen {
			return 0, errors.New("zstd frame too large")
		}
		if last {
			break
		}
	}
	n += 4 // content checksum
	if len(b) < n {
		return 0, errShort
	}
	return n, nil
}

var errShort = errors.New("input ends inside a frame")

// SegmentName is the file name of the segment whose first event has seq.
func SegmentName(firstSeq uint64) string {
	s := strconv.FormatUint(firstSeq, 10)
	return strings.Repeat("0", seqDigits-len(s)) + s + segmentSuffix
}

// parseSegmentName returns the first seq encoded in a segment file name.
func parseSegmentName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, segmentSuffix)
	if !ok || len(digits) != seqDigits {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	seq, err := strconv.ParseUint(digits, 10, 64)
	return seq, err == nil && seq > 0
}

// ValidStream reports whether name can be a stream: 1–128 bytes of
// [A-Za-z0-9._-], not starting with '.' (it is a directory name).
func ValidStream(name string) bool {
	if name == "" || len(name) > 128 || name[0] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
