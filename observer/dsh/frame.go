package dsh

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Part of the zstd format (RFC 8878); do not change.
const (
	frameMagic     = 0xFD2FB528
	skippableMagic = 0x184D2A50 // low 4 bits are free
	skippableMask  = 0xFFFFFFF0
	maxBlockSize   = 128 << 10 // Block_Maximum_Size
	checksumSize   = 4
)

// maxFrameContent bounds what one frame may decompress to. A host batch is
// a few hundred milliseconds of one session; this only stops a damaged or
// hostile frame of RLE blocks from allocating gigabytes.
const maxFrameContent = 256 << 20

var frameMagicBytes = []byte{0x28, 0xb5, 0x2f, 0xfd}

var (
	decoderOnce sync.Once
	decoder     *zstd.Decoder
)

// frameDecoder is shared: DecodeAll is safe for concurrent use.
func frameDecoder() *zstd.Decoder {
	decoderOnce.Do(func() {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(maxFrameContent),
		)
		if err != nil {
			panic(fmt.Sprintf("dsh: create zstd decoder: %v", err)) // options are constant
		}
		decoder = d
	})
	return decoder
}

// frameSpan describes the frame found at the start of a byte slice.
type frameSpan struct {
	n         int  // bytes from the magic through the checksum
	skippable bool // a skippable frame: no content
	hdrLen    int  // bytes of magic + frame header (before the first block)
}

// parseFrame finds the end of the frame at the start of b from its frame
// header and block headers alone, without decompressing. It returns errShort
// if b ends before the frame does and a formatError if the headers are not
// a frame this package accepts. Frames without a content checksum are
// refused: their content could not be verified before use.
func parseFrame(b []byte) (frameSpan, error) {
	if len(b) < 4 {
		return frameSpan{}, errShort
	}
	magic := binary.LittleEndian.Uint32(b)
	if magic&skippableMask == skippableMagic {
		if len(b) < 8 {
			return frameSpan{}, errShort
		}
		n := 8 + uint64(binary.LittleEndian.Uint32(b[4:]))
		if n > uint64(len(b)) {
			return frameSpan{}, errShort
		}
		return frameSpan{n: int(n), skippable: true, hdrLen: 8}, nil
	}
	if magic != frameMagic {
		return frameSpan{}, formatError(fmt.Sprintf("bad frame magic %#08x", magic))
	}
	if len(b) < 5 {
		return frameSpan{}, errShort
	}
	fhd := b[4]
	fcsFlag := fhd >> 6
	single := fhd&(1<<5) != 0
	if fhd&(1<<3) != 0 {
		return frameSpan{}, formatError("reserved bit set in frame header descriptor")
	}
	if fhd&(1<<2) == 0 {
		return frameSpan{}, formatError("frame has no content checksum")
	}
	p := 5
	if !single {
		p++ // Window_Descriptor
	}
	p += [4]int{0, 1, 2, 4}[fhd&3] // Dictionary_ID
	fcs := [4]int{0, 2, 4, 8}[fcsFlag]
	if fcsFlag == 0 && single {
		fcs = 1
	}
	p += fcs
	if p > len(b) {
		return frameSpan{}, errShort
	}
	hdrLen := p
	content := 0 // upper bound of the decompressed size
	for {
		if p+3 > len(b) {
			return frameSpan{}, errShort
		}
		h := uint32(b[p]) | uint32(b[p+1])<<8 | uint32(b[p+2])<<16
		last := h&1 != 0
		typ := (h >> 1) & 3
		size := int(h >> 3)
		p += 3
		if size > maxBlockSize {
			return frameSpan{}, formatError(fmt.Sprintf("block size %d exceeds %d", size, maxBlockSize))
		}
		switch typ {
		case 0: // raw
			p += size
			content += size
		case 1: // RLE: one byte repeated size times
			p++
			content += size
		case 2: // compressed: regenerates at most one full block
			p += size
			content += maxBlockSize
		default:
			return frameSpan{}, formatError("reserved block type")
		}
		if p > len(b) {
			return frameSpan{}, errShort
		}
		if content > maxFrameContent {
			return frameSpan{}, formatError("frame would decompress to more than the frame limit")
		}
		if last {
			break
		}
	}
	p += checksumSize
	if p > len(b) {
		return frameSpan{}, errShort
	}
	return frameSpan{n: p, hdrLen: hdrLen}, nil
}

// chunk is a run of whole host lines that ends at a durable boundary: one
// zstd frame, or one JSONL line. A reader may resume at End.
type chunk struct {
	Off, End int64    // byte range in the file
	Lines    [][]byte // without '\n'; empty lines dropped
	raw      []byte   // verified frame content (zstd only), for tests
}

// tail is what was left after the last whole chunk.
type tail struct {
	Bytes  int64
	Reason string // why it is not whole ("incomplete frame", a checksum error…)
}

// decodeFrame verifies and decompresses the frame at the start of b.
func decodeFrame(b []byte) (frameSpan, []byte, error) {
	fs, err := parseFrame(b)
	if err != nil || fs.skippable {
		return fs, nil, err
	}
	content, err := frameDecoder().DecodeAll(b[:fs.n], nil)
	if err != nil {
		return fs, nil, err
	}
	return fs, content, nil
}

// splitZstd cuts b, which starts at file offset base, into verified frames.
// It stops at the first frame that is incomplete or fails verification: if
// a verified frame follows, that is a *CorruptError, otherwise it is the
// tail.
func splitZstd(path string, b []byte, base int64) ([]chunk, tail, error) {
	var chunks []chunk
	off := 0
	for off < len(b) {
		fs, content, err := decodeFrame(b[off:])
		if err == nil {
			if !fs.skippable {
				chunks = append(chunks, chunk{
					Off: base + int64(off), End: base + int64(off+fs.n),
					Lines: splitLines(content), raw: content,
				})
			}
			off += fs.n
			continue
		}
		if verifiedFrameAfter(b, off+1) {
			return chunks, tail{}, &CorruptError{Path: path, Offset: base + int64(off), Err: err}
		}
		return chunks, tail{Bytes: int64(len(b) - off), Reason: err.Error()}, nil
	}
	return chunks, tail{}, nil
}

// verifiedFrameAfter reports whether a whole frame with a valid checksum
// starts anywhere in b at or after from.
func verifiedFrameAfter(b []byte, from int) bool {
	for from < len(b) {
		i := bytes.Index(b[from:], frameMagicBytes)
		if i < 0 {
			return false
		}
		from += i
		if fs, _, err := decodeFrame(b[from:]); err == nil && !fs.skippable {
			return true
		}
		from++
	}
	return false
}

// splitLines splits frame content into lines, dropping blank ones. The last
// line of a frame need not end in '\n': the frame is whole.
func splitLines(content []byte) [][]byte {
	var lines [][]byte
	for len(content) > 0 {
		var line []byte
		if i := bytes.IndexByte(content, '\n'); i >= 0 {
			line, content = content[:i], content[i+1:]
		} else {
			line, content = content, nil
		}
		if len(bytes.TrimSpace(line)) > 0 {
			lines = append(lines, line)
		}
	}
	return lines
}

// splitJSONL cuts b, which starts at file offset base, into whole lines.
// A line counts as whole when it ends in '\n' and is a JSON object, or when
// it is the last bytes of b and a complete JSON object (a half-written
// object is never valid JSON). A bad line with a whole line after it is a
// *CorruptError; a bad last line is the tail.
func splitJSONL(path string, b []byte, base int64) ([]chunk, tail, error) {
	var chunks []chunk
	off := 0
	for off < len(b) {
		line, next := b[off:], len(b)
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line, next = line[:i], off+i+1
		}
		c := chunk{Off: base + int64(off), End: base + int64(next)}
		if len(bytes.TrimSpace(line)) == 0 {
			if next == len(b) && b[len(b)-1] != '\n' {
				// Trailing blanks without a newline: wait for more.
				return chunks, tail{Bytes: int64(len(b) - off), Reason: "incomplete line"}, nil
			}
			chunks = append(chunks, c) // nothing to decode; the offset still advances
			off = next
			continue
		}
		if !isObject(line) {
			reason := "invalid JSON line"
			if next == len(b) && b[len(b)-1] != '\n' {
				reason = "incomplete line"
			}
			if wholeLineAfter(b, next) {
				return chunks, tail{}, &CorruptError{Path: path, Offset: base + int64(off), Err: fmt.Errorf("%s", reason)}
			}
			return chunks, tail{Bytes: int64(len(b) - off), Reason: reason}, nil
		}
		c.Lines = [][]byte{line}
		chunks = append(chunks, c)
		off = next
	}
	return chunks, tail{}, nil
}

func wholeLineAfter(b []byte, from int) bool {
	for from < len(b) {
		line, next := b[from:], len(b)
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line, next = line[:i], from+i+1
		}
		if isObject(line) {
			return true
		}
		from = next
	}
	return false
}

func isObject(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}
