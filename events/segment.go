package events

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// segRef names one segment file of a stream.
type segRef struct {
	first  uint64 // first seq, from the file name
	path   string
	size   int64 // bytes to read; the committed size for the active segment
	sealed bool
}

// listSegments returns the segments of the stream directory, by seq.
// Other files (.broken copies, stray files) are ignored.
func listSegments(fsys FS, dir string) ([]segRef, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list segments of %s: %w", dir, err)
	}
	var segs []segRef
	for _, e := range ents {
		first, ok := parseSegmentName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("list segments of %s: %w", dir, err)
		}
		segs = append(segs, segRef{first: first, path: filepath.Join(dir, e.Name()), size: info.Size()})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].first < segs[j].first })
	return segs, nil
}

// segState is what walking a segment found.
type segState struct {
	next   uint64   // seq after the last event read
	last   [32]byte // hash of the last batch (the header's prev if none)
	events uint64
	sealed bool
	torn   int64 // offset of a torn tail, -1 if none
	end    int64 // offset just past the last frame read
	size   int64 // bytes of the segment that were read (see segmentSize)
}

// walkOpts says what to check and what to do with each batch.
type walkOpts struct {
	stream    string
	decode    bool      // decode JSON (Next) or only split lines (NextRaw)
	skipBelow uint64    // do not decode batches wholly below this seq
	expNext   uint64    // seq the segment must start at; 0 = unknown
	expPrev   *[32]byte // hash the header's prev must equal; nil = unknown
	// trustThrough: batches ending at or below this seq, known to be
	// durable, are checked by their headers only (see skim). Only
	// recovery on open sets it.
	trustThrough uint64
	onBatch      func(Batch) error
	// report receives each problem; a non-nil return stops the walk.
	report func(*CorruptError) error
}

// walkSegment reads one segment, checking the header, the seq order and
// the hash chain of its batches, and the seal. A torn tail is returned
// in segState.torn, not reported: only the caller knows whether the
// segment is the last one (where a torn tail is expected after a crash).
func walkSegment(fsys FS, seg segRef, o walkOpts) (segState, error) {
	st := segState{next: seg.first, torn: -1}
	if o.expPrev != nil {
		st.last = *o.expPrev
	}
	f, err := fsys.OpenFile(seg.path, os.O_RDONLY, 0)
	if err != nil {
		return st, fmt.Errorf("open segment %s: %w", seg.path, err)
	}
	defer f.Close()
	size := segmentSize(f, seg)
	st.size = size
	r := NewReader(io.NewSectionReader(f, 0, size))
	r.skipBelow = o.skipBelow
	problem := func(off int64, err error) error {
		return o.report(&CorruptError{Segment: seg.path, Offset: off, Err: err})
	}
	var ce *CorruptError

	headerOK := false
	h, err := r.Header()
	switch {
	case err == nil:
		st.last = r.headerPrev
		if h.Stream != o.stream {
			err = problem(0, fmt.Errorf("stream header names stream %q, want %q", h.Stream, o.stream))
		} else if h.FirstSeq != seg.first {
			err = problem(0, fmt.Errorf("stream header says first seq %d, file name says %d", h.FirstSeq, seg.first))
		} else if o.expNext != 0 && seg.first != o.expNext {
			err = problem(0, chainError(seg.first, o.expNext))
		} else if o.expPrev != nil && r.headerPrev != *o.expPrev {
			err = problem(0, fmt.Errorf("%w: stream header prev hash does not match the last batch of the previous segment", ErrChain))
		} else {
			headerOK = true
		}
	case errors.Is(err, ErrTornTail):
		st.torn = r.Offset()
		return st, nil
	case errors.As(err, &ce):
		ce.Segment = seg.path
		err = o.report(ce)
	default:
		return st, fmt.Errorf("read segment %s: %w", seg.path, err)
	}
	if err != nil {
		return st, err
	}
	if o.trustThrough > 0 && headerOK {
		off, err := skim(f, r.Offset(), size, o.trustThrough, &st)
		if err != nil {
			return st, fmt.Errorf("read segment %s: %w", seg.path, err)
		}
		if off > r.Offset() {
			r = resumeReader(io.NewSectionReader(f, off, size-off), off)
			r.skipBelow = o.skipBelow
		}
	}

	for {
		var b Batch
		if o.decode {
			b, err = r.Next()
		} else {
			b, err = r.NextRaw()
		}
		if err == io.EOF {
			break
		}
		if errors.Is(err, ErrTornTail) {
			st.torn = r.Offset()
			break
		}
		if errors.As(err, &ce) {
			ce.Segment = seg.path
			if err := o.report(ce); err != nil {
				return st, err
			}
			continue
		}
		if err != nil {
			return st, fmt.Errorf("read segment %s: %w", seg.path, err)
		}
		bh := b.Header
		var perr error
		if bh.FirstSeq != st.next {
			perr = problem(b.Offset, chainError(bh.FirstSeq, st.next))
		} else if bh.Prev != st.last {
			perr = problem(b.Offset, fmt.Errorf("%w: batch at seq %d does not follow the previous batch (prev hash mismatch)", ErrChain, bh.FirstSeq))
		}
		if perr != nil {
			return st, perr
		}
		if bh.FirstSeq < st.next {
			// A duplicate or a batch out of order: keep the chain state
			// of the batches in order so that one misplaced batch is
			// reported once, not again at every batch after it.
			continue
		}
		for _, e := range b.Events {
			if e.Stream != o.stream {
				if err := problem(b.Offset, fmt.Errorf("event seq %d names stream %q, want %q", e.Seq, e.Stream, o.stream)); err != nil {
					return st, err
				}
				break
			}
		}
		st.next = bh.LastSeq() + 1
		st.last = bh.Next()
		if !bh.Gap {
			st.events += uint64(bh.Count)
		}
		if o.onBatch != nil {
			if err := o.onBatch(b); err != nil {
				return st, err
			}
		}
	}
	st.end = r.Offset()
	if s, ok := r.Seal(); ok && st.torn < 0 {
		st.sealed = true
		var err error
		switch {
		case s.FirstSeq != seg.first || s.FirstSeq+uint64(s.Count) != st.next:
			err = fmt.Errorf("seal covers seqs %d..%d, segment holds %d..%d", s.FirstSeq, s.LastSeq(), seg.first, st.next-1)
		case s.Last != st.last:
			err = fmt.Errorf("%w: seal hash does not match the last batch", ErrChain)
		}
		if err != nil {
			if err := problem(st.end-recordFrameSize, err); err != nil {
				return st, err
			}
		}
	}
	return st, nil
}

// notLastProblem checks the end of a segment that is not the last of its
// stream: only the last one may be unsealed or end in a torn tail (a
// crash can interrupt only the last write). It returns nil if the
// segment ends well.
func notLastProblem(seg segRef, st segState) *CorruptError {
	switch {
	case st.torn >= 0:
		return &CorruptError{Segment: seg.path, Offset: st.torn, Err: errors.New("incomplete or damaged batch at the end of a segment that is not the last one")}
	case !st.sealed:
		return &CorruptError{Segment: seg.path, Offset: st.end, Err: errors.New("segment is not sealed but is not the last one")}
	}
	return nil
}

// chainError explains a batch or segment starting at got when want was expected.
func chainError(got, want uint64) error {
	if got < want {
		return fmt.Errorf("%w: duplicated or reordered batch: starts at seq %d, but seqs up to %d were already read", ErrChain, got, want-1)
	}
	return fmt.Errorf("%w: missing events: seqs %d..%d are absent", ErrChain, want, got-1)
}

// trustSealed reads what open needs of a sealed segment that is not the
// last of its stream: its stream header (one small frame, checked by
// zstd's checksum) and its seal record (the last 96 bytes, CRC-checked).
// It checks them against the stream's name, the file name and the end of
// the segment before (expNext, expPrev), and returns the state after the
// segment: the seal's count gives the next seq, its hash the last batch.
// ok is false when the segment does not end in a seal that fits: the
// caller then walks it whole, which reports what is wrong. The batches
// in between are not read here: `dshmem verify` (and serve, in the
// background) reads every byte, and every reader checks each frame's
// checksum as it decodes it.
func trustSealed(fsys FS, seg segRef, stream string, expNext uint64, expPrev [32]byte) (segState, bool) {
	st := segState{torn: -1}
	f, err := fsys.OpenFile(seg.path, os.O_RDONLY, 0)
	if err != nil {
		return st, false
	}
	defer f.Close()
	seg.sealed = true // a segment before the last one is sealed, or it is walked
	seg.size = segmentSize(f, seg)
	if seg.size < 2*recordFrameSize {
		return st, false
	}
	r := NewReader(io.NewSectionReader(f, 0, min(seg.size-recordFrameSize, maxHeaderFrame)))
	h, err := r.Header()
	if err != nil || h.Stream != stream || h.FirstSeq != seg.first || seg.first != expNext || r.headerPrev != expPrev {
		return st, false
	}
	var rec [recordFrameSize]byte
	if _, err := f.ReadAt(rec[:], seg.size-recordFrameSize); err != nil {
		return st, false
	}
	sh, kind, err := parseRecord(rec[:])
	if err != nil || kind != kindSeal || sh.FirstSeq != seg.first || sh.Count == 0 {
		return st, false
	}
	st.next = seg.first + uint64(sh.Count)
	st.last = sh.Prev
	st.events = uint64(sh.Count)
	st.sealed = true
	st.end = seg.size
	st.size = seg.size
	return st, true
}

// segmentSize is how many bytes of seg to read from f, its open file.
// For the active segment that is seg.size, the size committed when the
// caller looked (the writer may be appending past it). A sealed segment
// is never appended to, but Log.Rewrite may have replaced its file by a
// scrubbed one of another size since seg was listed: its size is the
// open file's own, so a reader that opened the old file reads the old
// one whole and one that opened the new file reads the new one whole.
func segmentSize(f File, seg segRef) int64 {
	if !seg.sealed {
		return seg.size
	}
	if fi, err := f.Stat(); err == nil {
		return fi.Size()
	}
	return seg.size
}

// skimWindow is how many bytes skim reads at a time: a window holds the
// headers of many small batches (what a server's group commits of a few
// events each write). After a batch of skimWindow/8 bytes or more, a
// window would hold fewer than eight headers, and only the next header
// is read: one small read a batch costs less than copying the frames.
const skimWindow = 32 << 10

// skim reads the batch headers of a segment from off on, as long as each
// batch is trusted (its last seq is at or below through), continues the
// chain in st (seq and hash) and ends inside the segment's size. It
// reads only the headers, a window at a time, never a data frame, and
// advances st past each batch it takes. It returns the offset of the
// first record it did not take: the reader goes on from there and
// checks it fully, so a bad header, a seal, a batch past through or one
// cut short is handled (and reported) exactly as without skim.
//
// A header is CRC-checked and its batch's seqs and hash chain are
// checked; the frame's sha256 is not. That is safe only for what is
// known to be durable: a crash tears only what came after the last
// fsync, and damage to older bytes is Verify's to find (every read
// checks each frame's sha256 before it decodes it).
func skim(f io.ReaderAt, off, size int64, through uint64, st *segState) (int64, error) {
	var (
		buf    = make([]byte, 0, skimWindow)
		bufOff int64
		large  bool // the last batch taken was skimWindow/8 bytes or more
	)
	fill := func(n int64) error {
		buf = buf[:n]
		if _, err := f.ReadAt(buf, off); err != nil {
			return fmt.Errorf("read batch header at offset %d: %w", off, err)
		}
		bufOff = off
		return nil
	}
	for off+recordFrameSize <= size {
		if len(buf) == 0 || off+recordFrameSize > bufOff+int64(len(buf)) {
			n := min(int64(skimWindow), size-off)
			if large {
				n = min(maxRecordFrameSize, size-off)
			}
			if err := fill(n); err != nil {
				return off, err
			}
		}
		rl, ok := recordLen(buf[off-bufOff:])
		if !ok || off+int64(rl) > size {
			break
		}
		if off+int64(rl) > bufOff+int64(len(buf)) {
			// A scrubbed batch's longer record crosses the window's end.
			if err := fill(min(max(int64(skimWindow), int64(rl)), size-off)); err != nil {
				return off, err
			}
		}
		rec := buf[off-bufOff : off-bufOff+int64(rl)]
		h, kind, err := parseRecord(rec)
		if err != nil || (kind != kindBatch && kind != kindGap) || h.LastSeq() > through || h.FirstSeq != st.next || h.Prev != st.last {
			break
		}
		end := off + int64(rl) + int64(h.Length)
		if end > size {
			break
		}
		st.next = h.LastSeq() + 1
		st.last = h.Next()
		if !h.Gap {
			st.events += uint64(h.Count)
		}
		large = int64(rl)+int64(h.Length) >= skimWindow/8
		off = end
	}
	return off, nil
}
