package events

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// rewriteSuffix names the file a segment is rewritten into before it is
// renamed over the segment. A crash can leave one behind; it holds only
// rewritten bytes, and OpenLog and Rewrite remove it.
const rewriteSuffix = ".rewrite"

// LineRewriter returns the new bytes of the event line of seq (without
// its newline) and whether they differ from line. It must be a pure
// function of its input: Rewrite calls it twice per line of a segment it
// rewrites (once to find what changes, once to write). line is valid
// only during the call.
type LineRewriter func(seq uint64, line []byte) (out []byte, changed bool, err error)

// RewriteOptions configure Log.Rewrite. The zero value works.
type RewriteOptions struct {
	// DryRun finds what would change and changes nothing (the active
	// segment is not sealed either).
	DryRun bool
	// Step, when set, is called after each durable step of a segment's
	// rewrite, with the segment's path: "written" (the new file is
	// fsynced beside it), "renamed" (it replaced the segment), "synced"
	// (the directory is fsynced). Crash tests stop the process there.
	Step func(step, segment string)
	// Progress, when set, is called after each segment was read.
	Progress func(segment string, done, total int)
}

// RewrittenSegment is one segment Rewrite replaced (or would replace).
type RewrittenSegment struct {
	Path          string
	Events        int   // event lines changed
	Batches       int   // batches rewritten (now scrubbed)
	Before, After int64 // bytes of the file before and after
}

// RewriteReport says what Rewrite did to one stream.
type RewriteReport struct {
	Stream   string
	Segments []RewrittenSegment
	Events   int  // event lines changed, in all segments
	Sealed   bool // the active segment was sealed so that it could be rewritten
	// Broken counts the .broken copies (of torn tails a repair cut off)
	// that held changed lines and were rewritten.
	Broken int
}

// ErrRewrite is wrapped by Rewrite when a rewriter's line would change
// what identifies the event.
var ErrRewrite = errors.New("events: bad rewrite")

// Rewrite rewrites the event lines of a stream for which fn says they
// changed, in place: the scrub of forgotten text. Each segment holding
// such a line is rewritten whole into a new file beside it — unchanged
// batches byte for byte, each changed batch as a new data frame under a
// version 2 (scrubbed) batch record that keeps the batch's Hash — which
// is fsynced, read back and checked, then renamed over the segment, and
// the directory fsynced. A crash at any point leaves the old segment or
// the new one, both valid, and nothing else of the old bytes.
//
// Seqs, ids and the hash chain stay as they are: a line may change only
// in its data (ErrRewrite otherwise), a batch keeps its first seq, count
// and place in the chain, so the batches after it, the next segment and
// the seal are not touched. Only sealed segments are rewritten: when the
// active one holds a changed line it is sealed first (Seal), behind the
// appends queued before, and appends go on into a new segment meanwhile.
// The .broken copies a torn-tail repair kept in the stream's directory
// are rewritten too (rewriteBrokenCopies), so no copy keeps the old
// lines. One Rewrite runs at a time per log.
func (l *Log) Rewrite(ctx context.Context, stream string, fn LineRewriter, opts RewriteOptions) (RewriteReport, error) {
	rep := RewriteReport{Stream: stream}
	if l.readOnly {
		return rep, ErrReadOnly
	}
	l.rewriteMu.Lock()
	defer l.rewriteMu.Unlock()
	l.mu.Lock()
	s := l.streams[stream]
	l.mu.Unlock()
	if s == nil {
		return rep, nil
	}
	if !opts.DryRun {
		if err := removeRewriteTemps(l.fs, s.dir); err != nil {
			return rep, fmt.Errorf("rewrite stream %s: %w", stream, err)
		}
	}
	segs, _ := s.snapshot()
	if !opts.DryRun {
		n, err := rewriteBrokenCopies(l.fs, s.dir, stream, fn)
		if err != nil {
			return rep, fmt.Errorf("rewrite stream %s: %w", stream, err)
		}
		rep.Broken = n
	}
	for i, seg := range segs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		n, err := countChanges(l.fs, seg, stream, fn)
		if opts.Progress != nil {
			opts.Progress(seg.path, i+1, len(segs))
		}
		if err != nil {
			return rep, fmt.Errorf("rewrite stream %s: %w", stream, err)
		}
		if n == 0 {
			continue
		}
		if opts.DryRun {
			rep.Segments = append(rep.Segments, RewrittenSegment{Path: seg.path, Events: n, Before: seg.size})
			rep.Events += n
			continue
		}
		if !seg.sealed {
			if err := l.Seal(ctx, stream); err != nil {
				return rep, fmt.Errorf("rewrite stream %s: %w", stream, err)
			}
			rep.Sealed = true
			now, _ := s.snapshot()
			if i >= len(now) || now[i].path != seg.path || !now[i].sealed {
				return rep, fmt.Errorf("rewrite stream %s: segment %s was not sealed", stream, seg.path)
			}
			seg = now[i]
		}
		rs, err := l.rewriteSegment(s, seg, fn, opts)
		if err != nil {
			return rep, fmt.Errorf("rewrite stream %s: %w", stream, err)
		}
		rep.Segments = append(rep.Segments, rs)
		rep.Events += rs.Events
	}
	return rep, nil
}

// countChanges reads a segment (up to its committed size) and counts the
// lines fn changes.
func countChanges(fsys FS, seg segRef, stream string, fn LineRewriter) (int, error) {
	n := 0
	st, err := walkSegment(fsys, seg, walkOpts{
		stream: stream, skipBelow: 0,
		report: func(ce *CorruptError) error { return ce },
		onBatch: func(b Batch) error {
			for i, line := range b.Lines {
				_, changed, err := fn(b.Header.FirstSeq+uint64(i), line)
				if err != nil {
					return err
				}
				if changed {
					n++
				}
			}
			return nil
		},
	})
	if err != nil {
		return 0, err
	}
	if st.torn >= 0 {
		return 0, &CorruptError{Segment: seg.path, Offset: st.torn, Err: ErrTornTail}
	}
	return n, nil
}

// rewriteSegment writes the rewritten copy of a sealed segment beside
// it, checks it, and renames it over the segment.
func (l *Log) rewriteSegment(s *stream, seg segRef, fn LineRewriter, opts RewriteOptions) (res RewrittenSegment, err error) {
	res.Path = seg.path
	step := func(name string) {
		if opts.Step != nil {
			opts.Step(name, seg.path)
		}
	}
	f, err := l.fs.OpenFile(seg.path, os.O_RDONLY, 0)
	if err != nil {
		return res, fmt.Errorf("open segment %s: %w", seg.path, err)
	}
	defer f.Close()
	size := segmentSize(f, seg)
	res.Before = size
	r := NewReader(io.NewSectionReader(f, 0, size))
	if _, err := r.Header(); err != nil {
		return res, fmt.Errorf("read segment %s: %w", seg.path, err)
	}
	header := make([]byte, r.Offset())
	if _, err := f.ReadAt(header, 0); err != nil {
		return res, fmt.Errorf("read segment %s: %w", seg.path, err)
	}
	headerPrev := r.headerPrev

	tmp := seg.path + rewriteSuffix
	out, err := l.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return res, fmt.Errorf("create %s: %w", tmp, err)
	}
	renamed := false
	defer func() {
		if out != nil {
			out.Close()
		}
		if !renamed {
			// Never leave a half-written copy: what is there is new
			// bytes, but a later open must not wonder about it.
			_ = l.fs.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(out, 1<<20)
	w.Write(header)
	var (
		next    = seg.first
		last    = headerPrev
		content []byte
		rec     []byte
	)
	for {
		b, err := r.NextRaw()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, fmt.Errorf("read segment %s: %w", seg.path, err)
		}
		h := b.Header
		if h.FirstSeq != next || h.Prev != last {
			return res, &CorruptError{Segment: seg.path, Offset: b.Offset, Err: fmt.Errorf("%w: batch at seq %d is out of the chain", ErrChain, h.FirstSeq)}
		}
		next, last = h.LastSeq()+1, h.Next()
		if h.Gap {
			// Seqs a salvage lost: nothing to rewrite, the record stays.
			w.Write(appendGap(nil, h.FirstSeq, h.Count, h.Prev, h.Checksum))
			continue
		}
		content = content[:0]
		changed := 0
		for i, line := range b.Lines {
			seq := h.FirstSeq + uint64(i)
			nl, ch, err := fn(seq, line)
			if err != nil {
				return res, err
			}
			if ch {
				if err := checkRewrite(seq, line, nl); err != nil {
					return res, err
				}
				changed++
				line = nl
			}
			content = append(content, line...)
			content = append(content, '\n')
		}
		rec = rec[:0]
		if changed == 0 {
			rec = appendRecord(rec, h, kindBatch)
			w.Write(rec)
			w.Write(b.frame)
			continue
		}
		frame := sharedEncoder().EncodeAll(content, nil)
		nh := h
		if !nh.Scrubbed {
			nh.Scrubbed, nh.OrigLength, nh.OrigChecksum = true, h.Length, h.Checksum
		}
		nh.Length, nh.Checksum = uint32(len(frame)), sha256.Sum256(frame)
		rec = appendRecord(rec, nh, kindBatch)
		w.Write(rec)
		w.Write(frame)
		res.Events += changed
		res.Batches++
	}
	seal, ok := r.Seal()
	if !ok {
		return res, fmt.Errorf("segment %s is not sealed; only sealed segments are rewritten", seg.path)
	}
	w.Write(appendSeal(nil, seal))
	if err := w.Flush(); err != nil {
		return res, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := out.Sync(); err != nil {
		return res, fmt.Errorf("sync %s: %w", tmp, err)
	}
	err = out.Close()
	out = nil
	if err != nil {
		return res, fmt.Errorf("close %s: %w", tmp, err)
	}
	step("written")

	// Read the copy back before it replaces anything: every frame (its
	// sha256 and zstd's checksum), its line count, the seqs, the chain,
	// and the seal, which must end where the old segment ended. The
	// lines are not decoded again: the changed ones were (checkRewrite),
	// the others are the old segment's bytes, whose checksums matched.
	info, err := l.fs.Stat(tmp)
	if err != nil {
		return res, fmt.Errorf("check %s: %w", tmp, err)
	}
	st, err := walkSegment(l.fs, segRef{first: seg.first, path: tmp, size: info.Size()}, walkOpts{
		stream: s.name, expNext: seg.first, expPrev: &headerPrev,
		report: func(ce *CorruptError) error { return ce },
	})
	switch {
	case err != nil:
		return res, fmt.Errorf("check %s: %w", tmp, err)
	case st.torn >= 0 || !st.sealed || st.next != next || st.last != last:
		return res, fmt.Errorf("check %s: the rewritten segment does not end as %s does", tmp, seg.path)
	}
	res.After = info.Size()

	if err := l.fs.Rename(tmp, seg.path); err != nil {
		return res, fmt.Errorf("rename %s over %s: %w", tmp, seg.path, err)
	}
	renamed = true
	step("renamed")
	s.mu.Lock()
	for i := range s.segs {
		if s.segs[i].path == seg.path {
			s.segs[i].size = res.After
		}
	}
	s.mu.Unlock()
	if err := syncDir(l.fs, s.dir); err != nil {
		return res, fmt.Errorf("sync %s: %w", s.dir, err)
	}
	step("synced")
	return res, nil
}

// checkRewrite refuses a rewritten line that is not one event with the
// seq, stream, id, type, time, session and cwd of the line it replaces.
func checkRewrite(seq uint64, old, line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 || len(line) > maxEventSize {
		return fmt.Errorf("%w: seq %d: the new line holds a newline or is over %d bytes", ErrRewrite, seq, maxEventSize)
	}
	a, err := Unmarshal(old)
	if err != nil {
		return fmt.Errorf("%w: seq %d: %v", ErrRewrite, seq, err)
	}
	b, err := Unmarshal(line)
	if err != nil {
		return fmt.Errorf("%w: seq %d: the new line does not decode: %v", ErrRewrite, seq, err)
	}
	if a.V != b.V || a.Stream != b.Stream || a.Seq != b.Seq || a.ID != b.ID || a.Type != b.Type ||
		a.Time != b.Time || a.Session != b.Session || a.Cwd != b.Cwd {
		return fmt.Errorf("%w: seq %d: only the data of an event may change", ErrRewrite, seq)
	}
	return nil
}

// removeRewriteTemps removes what a crash during a rewrite left in a
// stream directory: the new file, not yet renamed (the segment itself is
// still the old one).
func removeRewriteTemps(fsys FS, dir string) error {
	ents, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	removed := false
	for _, e := range ents {
		name := e.Name()
		if first, ok := strings.CutSuffix(name, rewriteSuffix); ok {
			if i := strings.Index(first, segmentSuffix+brokenSuffix); i > 0 {
				first = first[:i+len(segmentSuffix)] // a .broken copy's
			}
			if _, ok := parseSegmentName(first); ok {
				if err := fsys.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("remove %s: %w", name, err)
				}
				removed = true
			}
		}
	}
	if removed {
		return syncDir(fsys, dir)
	}
	return nil
}

// rewriteBrokenCopies rewrites the .broken copies in a stream directory
// that hold a line fn changes: a copy keeps the segment as it was when a
// crash tore its tail, and so the text a scrub erases. The rewritten
// copy holds the copy's whole batches (the changed ones as scrubbed
// batches) and its seal if it had one; the torn bytes after them, which
// no reader can decode and which could hold the text too, are dropped.
// A copy whose whole batches hold nothing to change is left as it is.
func rewriteBrokenCopies(fsys FS, dir, stream string, fn LineRewriter) (int, error) {
	ents, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		name := e.Name()
		i := strings.Index(name, segmentSuffix+brokenSuffix)
		if i < 0 || !e.Type().IsRegular() || strings.HasSuffix(name, rewriteSuffix) {
			continue
		}
		if _, ok := parseSegmentName(name[:i+len(segmentSuffix)]); !ok {
			continue
		}
		changed, err := rewriteBroken(fsys, filepath.Join(dir, name), fn)
		if err != nil {
			return n, err
		}
		if changed {
			n++
		}
	}
	return n, nil
}

func rewriteBroken(fsys FS, path string, fn LineRewriter) (bool, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	r := NewReader(f)
	if _, err := r.Header(); err != nil {
		return false, nil // not even a whole header: no line to rewrite
	}
	header := make([]byte, r.Offset())
	if _, err := f.ReadAt(header, 0); err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	var out bytes.Buffer
	out.Write(header)
	changedAny := false
	for {
		b, err := r.NextRaw()
		if err != nil {
			break // the end, the torn tail, or damage: keep what was whole before it
		}
		h := b.Header
		if h.Gap {
			out.Write(appendGap(nil, h.FirstSeq, h.Count, h.Prev, h.Checksum))
			continue
		}
		var content []byte
		changed := false
		for i, line := range b.Lines {
			seq := h.FirstSeq + uint64(i)
			nl, ch, err := fn(seq, line)
			if err != nil {
				return false, err
			}
			if ch {
				if err := checkRewrite(seq, line, nl); err != nil {
					return false, err
				}
				changed, line = true, nl
			}
			content = append(append(content, line...), '\n')
		}
		if !changed {
			out.Write(appendRecord(nil, h, kindBatch))
			out.Write(b.frame)
			continue
		}
		changedAny = true
		frame := sharedEncoder().EncodeAll(content, nil)
		nh := h
		if !nh.Scrubbed {
			nh.Scrubbed, nh.OrigLength, nh.OrigChecksum = true, h.Length, h.Checksum
		}
		nh.Length, nh.Checksum = uint32(len(frame)), sha256.Sum256(frame)
		out.Write(appendRecord(nil, nh, kindBatch))
		out.Write(frame)
	}
	if !changedAny {
		return false, nil
	}
	if s, ok := r.Seal(); ok {
		out.Write(appendSeal(nil, s))
	}
	tmp := path + rewriteSuffix
	w, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return false, fmt.Errorf("create %s: %w", tmp, err)
	}
	_, err = w.Write(out.Bytes())
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return false, fmt.Errorf("rewrite %s: %w", path, err)
	}
	if err := syncDir(fsys, filepath.Dir(path)); err != nil {
		return true, fmt.Errorf("sync %s: %w", filepath.Dir(path), err)
	}
	return true, nil
}
