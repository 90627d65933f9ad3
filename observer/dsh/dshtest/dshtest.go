// Package dshtest writes session logs framed exactly as the DSH host
// frames them, for the tests of what reads them (observer/dsh, the DSH
// importer and the live watcher). Nothing but tests imports it.
package dshtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// The frame header the host writes (testdata/dsh-sessions/live): content
// checksum, no frame content size, not single segment, 2 MiB window.
// Part of the host's format as observed; do not change.
const (
	HostFHD    = 0x04 // Frame_Header_Descriptor
	HostWindow = 0x58 // Window_Descriptor
)

// frameMagic starts every zstd frame (RFC 8878).
var frameMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

var (
	encoderOnce sync.Once
	encoder     *zstd.Encoder
)

func frameEncoder() *zstd.Encoder {
	encoderOnce.Do(func() {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderCRC(true),
			zstd.WithSingleSegment(false),
			zstd.WithWindowSize(1<<21),
			zstd.WithEncoderConcurrency(1),
		)
		if err != nil {
			panic(fmt.Sprintf("dshtest: create zstd encoder: %v", err)) // options are constant
		}
		encoder = e
	})
	return encoder
}

// EncodeFrame compresses content into one zstd frame with the host's frame
// header: the blocks come from the zstd encoder, the header is rewritten to
// the host's form (no content size, 2 MiB window, checksum). content must
// not be empty: the host never writes an empty batch.
func EncodeFrame(content []byte) ([]byte, error) {
	if len(content) == 0 {
		return nil, errors.New("dshtest: encode frame: empty content")
	}
	enc := frameEncoder().EncodeAll(content, nil)
	hdr, err := headerLen(enc)
	if err != nil {
		return nil, fmt.Errorf("dshtest: encode frame: unexpected encoder output: %w", err)
	}
	out := make([]byte, 0, len(enc))
	out = append(out, frameMagic...)
	out = append(out, HostFHD, HostWindow)
	return append(out, enc[hdr:]...), nil
}

// headerLen is the length of the magic and frame header that start
// frame, which the encoder wrote with no dictionary and not single
// segment (RFC 8878 §3.1.1.1).
func headerLen(frame []byte) (int, error) {
	if len(frame) < 6 || !bytes.Equal(frame[:4], frameMagic) {
		return 0, errors.New("not a zstd frame")
	}
	fhd := frame[4]
	if fhd&(1<<5) != 0 || fhd&3 != 0 || fhd&(1<<2) == 0 {
		return 0, fmt.Errorf("frame header descriptor %#02x: want no single segment, no dictionary, a checksum", fhd)
	}
	n := 6 + [4]int{0, 2, 4, 8}[fhd>>6] // magic, descriptor, window, content size
	if n > len(frame) {
		return 0, errors.New("frame shorter than its header")
	}
	return n, nil
}

// Encoder writes a session log framed as the host frames it: the header
// line alone in the first frame, then one frame per batch.
type Encoder struct {
	w      io.Writer
	header bool
}

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// WriteHeader writes the header line as frame 1.
func (e *Encoder) WriteHeader(line []byte) error {
	if e.header {
		return errors.New("dshtest: header already written")
	}
	if err := e.WriteBatch([][]byte{line}); err != nil {
		return err
	}
	e.header = true
	return nil
}

// WriteBatch writes lines as one frame; a '\n' is added to each line that
// lacks one.
func (e *Encoder) WriteBatch(lines [][]byte) error {
	var content bytes.Buffer
	for _, l := range lines {
		content.Write(l)
		if len(l) == 0 || l[len(l)-1] != '\n' {
			content.WriteByte('\n')
		}
	}
	frame, err := EncodeFrame(content.Bytes())
	if err != nil {
		return err
	}
	if _, err := e.w.Write(frame); err != nil {
		return fmt.Errorf("write session frame: %w", err)
	}
	e.header = true
	return nil
}

// WriteZstd writes lines (the header first) as a host session log: frame 1
// holds lines[0], then every batch lines (batch < 1 means 1) form a frame.
func WriteZstd(w io.Writer, lines [][]byte, batch int) error {
	if len(lines) == 0 {
		return errors.New("dshtest: write session log: no header line")
	}
	if batch < 1 {
		batch = 1
	}
	e := NewEncoder(w)
	if err := e.WriteHeader(lines[0]); err != nil {
		return err
	}
	for rest := lines[1:]; len(rest) > 0; {
		n := min(batch, len(rest))
		if err := e.WriteBatch(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}
