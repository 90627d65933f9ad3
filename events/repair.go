package events

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
)

// Problem is one finding of Verify. Its JSON form is what `dshmem
// verify --json` prints.
type Problem struct {
	Stream  string `json:"stream"`
	Segment string `json:"segment"` // path of the segment
	Offset  int64  `json:"offset"`  // byte offset in the segment
	Msg     string `json:"problem"`
	// Repairable is set for a torn tail of a stream's last segment, the
	// one kind of damage Repair (and OpenLog) fixes.
	Repairable bool `json:"repairable"`
}

func (p Problem) String() string {
	return fmt.Sprintf("%s at offset %d: %s", p.Segment, p.Offset, p.Msg)
}

// String says what a torn-tail repair did, for people.
func (r Repaired) String() string {
	return fmt.Sprintf("%s: cut to %d bytes (%d torn bytes dropped); the original is kept as %s", r.Segment, r.Offset, r.Dropped, r.Broken)
}

// Verify reads every segment of every stream in dir and reports every
// problem it finds: damaged frames, torn tails, missing, duplicated or
// reordered batches, a broken hash chain (within and across segments),
// unsealed segments that are not the last, seal mismatches, envelopes
// that do not decode or whose seq or stream disagree with their batch.
// It changes nothing. The error is for I/O failures only.
func Verify(dir string) ([]Problem, error) {
	problems, _, err := verify(OSFS{}, dir)
	return problems, err
}

// Checked counts what a verification read.
type Checked struct {
	Streams, Segments int
	Events            uint64 // seqs the streams reached, whole batches only
	// Scrubbed lists the seqs whose batches Log.Rewrite rewrote: their
	// new frames were checked, and their place in the hash chain, but
	// the bytes they were first written with are gone by design.
	Scrubbed []ScrubbedRange
	// Lost lists the seqs of gap records: seqs Salvage could not keep
	// (Stream, First and Last as in Scrubbed).
	Lost []ScrubbedRange
}

// ScrubbedRange is a run of seqs of a stream in scrubbed batches.
type ScrubbedRange struct {
	Stream string `json:"stream"`
	First  uint64 `json:"first"`
	Last   uint64 `json:"last"`
}

func (r ScrubbedRange) String() string {
	return fmt.Sprintf("stream %s: seqs %d..%d scrubbed", r.Stream, r.First, r.Last)
}

// addScrubbed notes the batch h of stream, merging it into the last
// range when it follows it.
func (c *Checked) addScrubbed(stream string, h BatchHeader) {
	if n := len(c.Scrubbed); n > 0 {
		if last := &c.Scrubbed[n-1]; last.Stream == stream && last.Last+1 == h.FirstSeq {
			last.Last = h.LastSeq()
			return
		}
	}
	c.Scrubbed = append(c.Scrubbed, ScrubbedRange{Stream: stream, First: h.FirstSeq, Last: h.LastSeq()})
}

// VerifyCounted is Verify that also says how much it read, for a report
// such as "ok: 3 streams, 5 segments, 1,204 events verified".
func VerifyCounted(dir string) ([]Problem, Checked, error) {
	return verify(OSFS{}, dir)
}

func verify(fsys FS, dir string) ([]Problem, Checked, error) {
	names, err := listStreams(fsys, dir)
	if err != nil {
		return nil, Checked{}, fmt.Errorf("verify log %s: %w", dir, err)
	}
	return verifyStreams(context.Background(), fsys, dir, names, func(name string) ([]segRef, error) {
		return listSegments(fsys, filepath.Join(dir, name))
	})
}

// Verify is the package Verify for an open log, safe while it is
// written: it reads every segment of every stream as far as was
// committed when it reached the stream, so a batch being written is not
// mistaken for a torn tail. It stops early (with ctx.Err()) when ctx
// ends. `dshmem serve` runs it in the background at start.
func (l *Log) Verify(ctx context.Context) ([]Problem, Checked, error) {
	l.mu.Lock()
	names := make([]string, 0, len(l.streams))
	for name := range l.streams {
		names = append(names, name)
	}
	l.mu.Unlock()
	sort.Strings(names)
	problems, c, err := verifyStreams(ctx, l.fs, l.dir, names, func(name string) ([]segRef, error) {
		l.mu.Lock()
		s := l.streams[name]
		l.mu.Unlock()
		segs, _ := s.snapshot()
		return segs, nil
	})
	// Damage quarantines its stream (a torn tail cannot be met here: a
	// segment is read only as far as was committed).
	for _, p := range problems {
		if p.Repairable {
			continue
		}
		if _, ok := l.QuarantinedStream(p.Stream); ok {
			continue
		}
		if qerr := l.Quarantine(Damage{Stream: p.Stream, Segment: p.Segment, Offset: p.Offset, Reason: p.Msg}); qerr != nil && err == nil {
			err = qerr
		}
	}
	return problems, c, err
}

func verifyStreams(ctx context.Context, fsys FS, dir string, names []string, segments func(string) ([]segRef, error)) ([]Problem, Checked, error) {
	var c Checked
	var problems []Problem
	for _, name := range names {
		segs, err := segments(name)
		if err != nil {
			return problems, c, fmt.Errorf("verify log %s: %w", dir, err)
		}
		c.Streams++
		c.Segments += len(segs)
		var zero [32]byte
		expNext, expPrev := uint64(1), &zero
		for i, seg := range segs {
			st, err := walkSegment(fsys, seg, walkOpts{
				stream: name, decode: true, expNext: expNext, expPrev: expPrev,
				report: func(ce *CorruptError) error {
					p := corruptProblem(ce)
					p.Stream = name
					problems = append(problems, p)
					return nil
				},
				onBatch: func(b Batch) error {
					if b.Header.Scrubbed {
						c.addScrubbed(name, b.Header)
					}
					if b.Header.Gap {
						c.Lost = append(c.Lost, ScrubbedRange{Stream: name, First: b.Header.FirstSeq, Last: b.Header.LastSeq()})
					}
					return ctx.Err()
				},
			})
			if err != nil && ctx.Err() != nil {
				return problems, c, ctx.Err()
			}
			if err != nil {
				return problems, c, fmt.Errorf("verify log %s: %w", dir, err)
			}
			if i < len(segs)-1 {
				if ce := notLastProblem(seg, st); ce != nil {
					p := corruptProblem(ce)
					p.Stream = name
					problems = append(problems, p)
				}
			} else if st.torn >= 0 {
				problems = append(problems, Problem{Stream: name, Segment: seg.path, Offset: st.torn, Repairable: true,
					Msg: fmt.Sprintf("torn tail: the last %d bytes are an incomplete batch (a crash during a write); `dshmem repair` cuts them off and keeps a .broken copy", seg.size-st.torn)})
			}
			expNext, expPrev = st.next, &st.last
		}
		c.Events += expNext - 1
	}
	return problems, c, nil
}

func corruptProblem(ce *CorruptError) Problem {
	return Problem{Segment: ce.Segment, Offset: ce.Offset, Msg: ce.Err.Error()}
}

// Repair cuts off the torn tail of the last segment of each stream in
// dir, after copying the segment to <name>.broken. It touches nothing
// else: a stream with corruption is left as it is and reported in the
// returned error (a *CorruptError inside), with the repairs that were
// made in other streams.
func Repair(dir string) ([]Repaired, error) {
	return repair(OSFS{}, dir)
}

func repair(fsys FS, dir string) ([]Repaired, error) {
	names, err := listStreams(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("repair log %s: %w", dir, err)
	}
	var (
		repairs []Repaired
		errs    []error
	)
	for _, name := range names {
		rec, err := recoverStream(fsys, dir, name, 0, recoverRepair)
		repairs = append(repairs, rec.repairs...)
		if err != nil {
			var ce *CorruptError
			if errors.As(err, &ce) {
				err = fmt.Errorf("stream %s is corrupt, not repaired (%w): repair cuts only a torn tail; run `dshmem verify` to list every problem and `dshmem salvage %s` to keep every whole batch", name, err, name)
			}
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return repairs, fmt.Errorf("repair log %s: %w", dir, errors.Join(errs...))
	}
	return repairs, nil
}
