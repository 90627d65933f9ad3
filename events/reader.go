package events

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Batch is one durable append batch: a batch header and its data frame.
type Batch struct {
	Offset int64 // byte offset of the batch header frame in the segment
	End    int64 // byte offset just past the data frame
	Header BatchHeader
	// Events are the decoded envelopes (nil for NextRaw and for batches
	// skipped below a start seq).
	Events []Envelope
	// Lines are the raw JSON lines without their newline. They alias an
	// internal buffer and are valid only until the next call to Next.
	Lines [][]byte

	frame []byte // the data frame as read (aliases the reader's buffer)
}

// Reader reads a segment batch by batch. It never decodes events from a
// frame before the frame's checksum was verified: the batch header gives
// the frame's length, the whole frame is read, hashed and then decoded
// with DecodeAll (which also checks zstd's own content checksum).
//
// Next returns io.EOF at a clean end, ErrTornTail when the input ends in
// an incomplete or damaged batch with nothing valid after it, and a
// *CorruptError for a damaged frame followed by valid data or for any
// byte after a seal. After a *CorruptError, Next resumes at the next
// valid frame (or returns io.EOF if there is none), so a verifier can
// list every problem; io.EOF and ErrTornTail are final.
type Reader struct {
	src *bufio.Reader
	off int64

	headerDone bool
	header     StreamHeader
	headerPrev [32]byte
	headerErr  error

	sealed bool
	seal   Seal

	err error // final error

	rec     [maxRecordFrameSize]byte
	frame   []byte
	content []byte
	lines   [][]byte

	// skipBelow makes Next skip decoding batches whose last seq is below it.
	skipBelow uint64
}

// NewReader returns a Reader that reads a segment from r.
func NewReader(r io.Reader) *Reader {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 2*maxHeaderFrame {
		br = bufio.NewReaderSize(r, 256<<10)
	}
	return &Reader{src: br}
}

var (
	decoderOnce   sync.Once
	decoder       *zstd.Decoder // batch frames, after their sha256 matched
	headerDecoder *zstd.Decoder // stream header frames, checked only by XXH64
)

func sharedDecoder() *zstd.Decoder {
	decoderOnce.Do(func() {
		var err error
		decoder, err = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithDecoderMaxMemory(maxDecoded))
		if err != nil {
			panic(err) // only bad options fail
		}
		// A damaged header frame may claim any content size; DecodeAll
		// would allocate it up front. A header line is small.
		headerDecoder, err = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(maxHeaderFrame),
			zstd.WithDecoderMaxWindow(1<<20))
		if err != nil {
			panic(err)
		}
	})
	return decoder
}

// resumeReader returns a Reader for the rest of a segment whose stream
// header and first batches were already read (skimmed): r yields the
// segment's bytes from offset off on, and offsets are reported from the
// segment's start.
func resumeReader(r io.Reader, off int64) *Reader {
	rd := NewReader(r)
	rd.off = off
	rd.headerDone = true
	return rd
}

// Offset is the offset just past the last frame consumed. After
// ErrTornTail it is where the torn tail starts: the length to truncate to.
func (r *Reader) Offset() int64 { return r.off }

// Header returns the segment's stream header, reading it if needed.
// Every call returns the same result.
func (r *Reader) Header() (StreamHeader, error) {
	if !r.headerDone {
		r.headerDone = true
		r.headerErr = r.readHeader()
	}
	return r.header, r.headerErr
}

// Seal returns the segment's seal record once one was read.
func (r *Reader) Seal() (Seal, bool) { return r.seal, r.sealed }

// Next returns the next batch with its events decoded.
func (r *Reader) Next() (Batch, error) { return r.next(true) }

// NextRaw returns the next batch with only its raw lines: the checksum
// is verified, the JSON is not decoded. It is the fast path for readers
// that copy or index lines.
func (r *Reader) NextRaw() (Batch, error) { return r.next(false) }

func (r *Reader) readHeader() error {
	peek, perr := r.src.Peek(maxHeaderFrame)
	n, err := zstdFrameEnd(peek)
	if errors.Is(err, errShort) {
		if perr != nil { // input really ends here
			if perr != io.EOF && perr != bufio.ErrBufferFull {
				r.err = fmt.Errorf("read segment header: %w", perr)
				return r.err
			}
			return r.torn(r.off)
		}
		err = errors.New("stream header frame too large")
	}
	if err != nil {
		return r.badHeader(fmt.Errorf("stream header frame: %w", err))
	}
	frame := bytes.Clone(peek[:n])
	sharedDecoder()
	content, derr := headerDecoder.DecodeAll(frame, nil)
	if derr != nil {
		return r.badHeader(fmt.Errorf("stream header frame: %w: %v", ErrChecksum, derr))
	}
	h, prev, herr := decodeStreamHeader(content)
	if herr != nil {
		// The frame is intact, so the position is trustworthy: report and go on.
		_, _ = r.src.Discard(n)
		r.off = int64(n)
		return &CorruptError{Offset: 0, Err: herr}
	}
	_, _ = r.src.Discard(n)
	r.off = int64(n)
	r.header, r.headerPrev = h, prev
	return nil
}

func (r *Reader) badHeader(cause error) error {
	first, _ := r.src.ReadByte()
	return r.bad(0, []byte{first}, cause)
}

func (r *Reader) next(decode bool) (Batch, error) {
	if r.err != nil {
		return Batch{}, r.err
	}
	if !r.headerDone {
		// A damaged header is reported once; the batches after it are
		// still read (r.err stops reading when nothing follows).
		if _, err := r.Header(); err != nil {
			return Batch{}, err
		}
	}
	for {
		off := r.off
		n, err := io.ReadFull(r.src, r.rec[:recordFrameSize])
		switch {
		case n == 0 && err == io.EOF:
			r.err = io.EOF
			return Batch{}, io.EOF
		case err == io.ErrUnexpectedEOF && r.sealed:
			return Batch{}, r.bad(off, bytes.Clone(r.rec[:n]), errAfterSeal)
		case err == io.ErrUnexpectedEOF:
			return Batch{}, r.torn(off)
		case err != nil:
			r.err = fmt.Errorf("read segment at offset %d: %w", off, err)
			return Batch{}, r.err
		}
		if r.sealed {
			return Batch{}, r.bad(off, bytes.Clone(r.rec[:n]), errAfterSeal)
		}
		if size, ok := recordLen(r.rec[:n]); ok && size > n {
			// A scrubbed batch's record is longer: read the rest of it.
			_, err := io.ReadFull(r.src, r.rec[n:size])
			switch {
			case err == io.ErrUnexpectedEOF || err == io.EOF:
				return Batch{}, r.torn(off)
			case err != nil:
				r.err = fmt.Errorf("read segment at offset %d: %w", off, err)
				return Batch{}, r.err
			}
			n = size
		}
		h, kind, perr := parseRecord(r.rec[:n])
		if perr != nil {
			return Batch{}, r.bad(off, bytes.Clone(r.rec[:n]), perr)
		}
		if kind == kindSeal {
			r.sealed = true
			r.seal = Seal{FirstSeq: h.FirstSeq, Count: h.Count, Last: h.Prev}
			r.off += recordFrameSize
			continue
		}
		if kind == kindGap {
			// Seqs Salvage could not keep: no frame follows.
			r.off = off + recordFrameSize
			return Batch{Offset: off, End: r.off, Header: h}, nil
		}
		recLen := h.recordFrameLen()
		if err := r.readFrame(int(h.Length)); err != nil {
			if err == io.ErrUnexpectedEOF || err == io.EOF {
				return Batch{}, r.torn(off)
			}
			r.err = fmt.Errorf("read segment at offset %d: %w", off, err)
			return Batch{}, r.err
		}
		if sha256.Sum256(r.frame) != h.Checksum {
			consumed := append(bytes.Clone(r.rec[:recLen]), r.frame...)
			return Batch{}, r.bad(off, consumed, fmt.Errorf("batch at seq %d: %w", h.FirstSeq, ErrChecksum))
		}
		r.off = off + recLen + int64(h.Length)
		b := Batch{Offset: off, End: r.off, Header: h, frame: r.frame}
		if r.skipBelow > 0 && h.LastSeq() < r.skipBelow {
			return b, nil
		}
		return r.decodeBatch(b, decode)
	}
}

// decodeBatch decompresses a verified frame and splits (and decodes) its
// lines. A failure here is reported at the batch's offset; the reader's
// position is already past the batch, so reading goes on.
func (r *Reader) decodeBatch(b Batch, decode bool) (Batch, error) {
	h := b.Header
	corrupt := func(err error) (Batch, error) {
		return Batch{}, &CorruptError{Offset: b.Offset, Err: fmt.Errorf("batch at seq %d: %w", h.FirstSeq, err)}
	}
	content, err := sharedDecoder().DecodeAll(r.frame, r.content[:0])
	if err != nil {
		return corrupt(fmt.Errorf("decompress: %w", err))
	}
	r.content = content
	if len(content) == 0 || content[len(content)-1] != '\n' {
		return corrupt(errors.New("frame does not end with a newline"))
	}
	r.lines = r.lines[:0]
	for rest := content; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		r.lines = append(r.lines, rest[:i])
		rest = rest[i+1:]
	}
	if uint64(len(r.lines)) != uint64(h.Count) {
		return corrupt(fmt.Errorf("header says %d events, frame holds %d lines", h.Count, len(r.lines)))
	}
	b.Lines = r.lines
	if !decode {
		return b, nil
	}
	b.Events = make([]Envelope, len(r.lines))
	for i, line := range r.lines {
		e, err := Unmarshal(line)
		if err != nil {
			return corrupt(fmt.Errorf("line %d: %w", i+1, err))
		}
		if want := h.FirstSeq + uint64(i); e.Seq != want {
			return corrupt(fmt.Errorf("line %d has seq %d, want %d", i+1, e.Seq, want))
		}
		b.Events[i] = e
	}
	return b, nil
}

// readFrame reads n bytes into r.frame, growing the buffer only as data
// arrives so that a damaged length cannot force a huge allocation.
func (r *Reader) readFrame(n int) error {
	r.frame = r.frame[:0]
	for len(r.frame) < n {
		chunk := min(n-len(r.frame), 1<<20)
		start := len(r.frame)
		r.frame = append(r.frame, make([]byte, chunk)...)
		if _, err := io.ReadFull(r.src, r.frame[start:]); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reader) torn(off int64) error {
	r.off = off
	r.err = ErrTornTail
	return ErrTornTail
}

// errAfterSeal reports bytes after a seal record. The writer writes a
// segment's seal in the same write as its last batch and never opens the
// segment again, so no crash can leave bytes there: they are corruption,
// never a torn tail to cut off.
var errAfterSeal = errors.New("data after the seal (a sealed segment is never written again)")

// bad handles a damaged frame starting at off, whose bytes read so far
// are consumed. It reads the rest of the input and looks for a valid
// frame after off: if there is one the damage is corruption and reading
// resumes there; if not, the damage is a torn tail — unless a seal was
// read, after which nothing may follow: then it is corruption and
// reading ends.
func (r *Reader) bad(off int64, consumed []byte, cause error) error {
	rest, err := io.ReadAll(r.src)
	if err != nil {
		r.err = fmt.Errorf("read segment after offset %d: %w", off, err)
		return r.err
	}
	tail := append(consumed[1:len(consumed):len(consumed)], rest...)
	i := findValid(tail)
	if i < 0 && (r.sealed || wholeDamaged(append(consumed[:1:1], tail...))) {
		r.off, r.err = off, io.EOF
		return &CorruptError{Offset: off, Err: cause}
	}
	if i < 0 {
		return r.torn(off)
	}
	r.src = bufio.NewReader(bytes.NewReader(tail[i:]))
	r.off = off + 1 + int64(i)
	r.sealed = false
	return &CorruptError{Offset: off, Err: cause}
}

var magicBytes = binary.LittleEndian.AppendUint32(nil, skippableMagic)

// wholeDamaged reports whether t, the bytes from a damaged frame to the
// end of the input, hold a whole record frame that does not check, or a
// whole batch whose data frame does not match its checksum. A crash
// leaves a prefix of what the writer wrote — a record and a frame cut
// short — so a damaged batch that is whole is corruption, never a torn
// tail to cut off. A record counts as ours when its magic or its CRC
// is right: one flipped byte spoils only one of the two.
//
// (A file system that keeps a file's new length but not its data after
// a power cut, leaving zeros, could make a record cut by the page
// boundary look whole: it is then reported as damage, which `dshmem
// salvage` handles without losing a whole batch, rather than cut.)
func wholeDamaged(t []byte) bool {
	if len(t) < recordFrameSize {
		return false
	}
	n, ok := recordLen(t)
	if !ok {
		n = recordFrameSize
		if binary.LittleEndian.Uint32(t) != skippableMagic && !crcMatches(t, recordFrameSize) &&
			!(len(t) >= scrubbedRecordFrame && crcMatches(t, scrubbedRecordFrame)) {
			return false // neither the magic nor the CRC: not a record we wrote
		}
	}
	if len(t) < n {
		return false
	}
	h, kind, err := parseRecord(t[:n])
	if err != nil || kind != kindBatch {
		return true // a whole record that does not check
	}
	return len(t) >= n+int(h.Length)
}

// crcMatches reports whether the first n bytes of b are a record frame
// whose CRC-32C (its last 4 bytes, over bytes 8..n-4) is right.
func crcMatches(b []byte, n int) bool {
	p := b[8:n]
	return crc32.Checksum(p[:len(p)-4], castagnoli) == binary.LittleEndian.Uint32(p[len(p)-4:])
}

// findValid returns the index of the first complete, valid record frame
// in b (a batch whose data frame matches its checksum, or a seal), or -1.
func findValid(b []byte) int {
	for i := 0; i+recordFrameSize <= len(b); {
		j := bytes.Index(b[i:], magicBytes)
		if j < 0 {
			return -1
		}
		p := i + j
		if p+recordFrameSize > len(b) {
			return -1
		}
		size, ok := recordLen(b[p:])
		if ok && p+size > len(b) {
			ok = false
		}
		var h BatchHeader
		var kind byte
		var err error = errRecordMagic
		if ok {
			h, kind, err = parseRecord(b[p : p+size])
		}
		if err == nil {
			if kind == kindSeal || kind == kindGap {
				return p
			}
			end := p + size + int(h.Length)
			if end <= len(b) && sha256.Sum256(b[p+size:end]) == h.Checksum {
				return p
			}
		}
		i = p + 1
	}
	return -1
}
