package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A stream with damage — a frame that does not match its checksum, a
// bad batch header, seq or hash chain, a bad seal, bytes after a seal —
// is quarantined, not the log: OpenLog and OpenLogReadOnly open every
// other stream as usual, and the damaged one reads what precedes the
// damage and refuses appends (a *QuarantinedError, ErrQuarantined)
// until `dshmem salvage` (Salvage) has moved its damage aside. A
// writable log records the quarantine in <stream>/quarantine.json, so
// that damage only a full read finds (Log.Verify: in a sealed segment,
// which open trusts by its seal) stays known after a restart, and the
// read-only commands see it too.

// ErrQuarantined is wrapped by every append to a quarantined stream.
var ErrQuarantined = errors.New("events: stream quarantined")

// quarantineFile is the marker in a quarantined stream's directory.
// Part of the on-disk layout; do not change.
const quarantineFile = "quarantine.json"

// Damage is why a stream is quarantined: the first damage found in it.
type Damage struct {
	Stream  string `json:"stream"`
	Segment string `json:"segment"` // path of the damaged segment
	Offset  int64  `json:"offset"`  // byte offset of the damage in it
	Reason  string `json:"reason"`
	// Serves is the last seq the log reads of the stream: the damage
	// comes after it (for damage found at open), or lies in a segment
	// open trusts by its seal (then the batch that holds it is refused
	// by every read that reaches it).
	Serves uint64 `json:"serves"`
}

func (d Damage) String() string {
	return fmt.Sprintf("stream %s: damage in %s at offset %d: %s", d.Stream, d.Segment, d.Offset, d.Reason)
}

// QuarantinedError is returned by Append, Enqueue and Seal for a
// quarantined stream.
type QuarantinedError struct{ Damage Damage }

func (e *QuarantinedError) Error() string {
	d := e.Damage
	return fmt.Sprintf("stream %s is quarantined and read-only: damage in segment %s at offset %d (%s); "+
		"it serves seqs up to %d; run `dshmem salvage %s` to keep every whole batch and write to it again",
		d.Stream, filepath.Base(d.Segment), d.Offset, d.Reason, d.Serves, d.Stream)
}

func (e *QuarantinedError) Unwrap() error { return ErrQuarantined }

// damageOf turns the corruption recovery met into a Damage.
func damageOf(stream string, err error, serves uint64) Damage {
	d := Damage{Stream: stream, Reason: err.Error(), Serves: serves}
	var ce *CorruptError
	if errors.As(err, &ce) {
		d.Segment, d.Offset, d.Reason = ce.Segment, ce.Offset, ce.Err.Error()
	}
	return d
}

// Quarantined lists the quarantined streams, by name.
func (l *Log) Quarantined() []Damage {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Damage, 0, len(l.quarantined))
	for _, d := range l.quarantined {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Damage) int { return strings.Compare(a.Stream, b.Stream) })
	return out
}

// QuarantinedStream says whether stream is quarantined, and why.
func (l *Log) QuarantinedStream(stream string) (Damage, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.quarantined[stream]
	return d, ok
}

// Quarantine marks stream as damaged: appends to it are refused from
// now on. A writable log records it in the stream's directory (fsynced),
// so the next open quarantines the stream again until Salvage; the
// first damage recorded stays. A stream already quarantined is left as
// it is.
func (l *Log) Quarantine(d Damage) error {
	l.mu.Lock()
	if _, ok := l.quarantined[d.Stream]; ok {
		l.mu.Unlock()
		return nil
	}
	if s := l.streams[d.Stream]; s != nil && d.Serves == 0 {
		s.mu.Lock()
		d.Serves = s.lastSeq
		s.mu.Unlock()
	}
	if l.quarantined == nil {
		l.quarantined = map[string]Damage{}
	}
	l.quarantined[d.Stream] = d
	l.mu.Unlock()
	if l.readOnly {
		return nil
	}
	return writeQuarantine(l.fs, filepath.Join(l.dir, d.Stream), d)
}

// refuseQuarantined is the error for an append to a quarantined
// stream, or nil. Called with l.mu held.
func (l *Log) refuseQuarantinedLocked(stream string) error {
	if d, ok := l.quarantined[stream]; ok {
		return &QuarantinedError{Damage: d}
	}
	return nil
}

// writeQuarantine writes the marker atomically (writeJSONFile).
func writeQuarantine(fsys FS, sdir string, d Damage) error {
	if err := writeJSONFile(fsys, filepath.Join(sdir, quarantineFile), d); err != nil {
		return fmt.Errorf("record quarantine of %s: %w", d.Stream, err)
	}
	return nil
}

// readQuarantine reads a stream's marker; ok is false when there is none.
func readQuarantine(fsys FS, sdir string) (d Damage, ok bool, err error) {
	f, err := fsys.OpenFile(filepath.Join(sdir, quarantineFile), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("read quarantine marker: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return d, false, fmt.Errorf("read quarantine marker: %w", err)
	}
	if err := json.Unmarshal(b, &d); err != nil || d.Stream == "" {
		// A marker that does not decode still says the stream is damaged.
		return Damage{Reason: fmt.Sprintf("quarantine marker %s does not decode", filepath.Join(sdir, quarantineFile))}, true, nil
	}
	return d, true, nil
}

// Lost reports whether every seq first..last of stream lies in gap
// records: seqs `dshmem salvage` could not keep, which a fold steps
// over. The gaps of a stream are read once (its segments walked, which
// only a fold crossing a gap asks for) and kept: only Salvage writes
// gaps, with no Log open.
func (l *Log) Lost(stream string, first, last uint64) bool {
	if first > last {
		return false
	}
	l.mu.Lock()
	gaps, ok := l.gaps[stream]
	s := l.streams[stream]
	l.mu.Unlock()
	if !ok && s != nil {
		segs, _ := s.snapshot()
		for _, seg := range segs {
			walkSegment(l.fs, seg, walkOpts{stream: stream, report: func(*CorruptError) error { return nil },
				onBatch: func(b Batch) error {
					if b.Header.Gap {
						gaps = append(gaps, SeqRange{b.Header.FirstSeq, b.Header.LastSeq()})
					}
					return nil
				}})
		}
		mergeRanges(&gaps)
		l.mu.Lock()
		if l.gaps == nil {
			l.gaps = map[string][]SeqRange{}
		}
		l.gaps[stream] = gaps
		l.mu.Unlock()
	}
	for _, g := range gaps {
		if g.First <= first && last <= g.Last {
			return true
		}
	}
	return false
}

// ErrDamageNotConfirmed is RecordQuarantine's error when a second read
// of the stream does not meet the damage again.
var ErrDamageNotConfirmed = errors.New("events: the damage was not found again")

// RecordQuarantine records, in the log in dir, the quarantine of the
// stream a damage problem (not Repairable) was found in, as a writable
// Log's Quarantine does: every later open then quarantines the stream
// until Salvage. It is for a reader that found the damage without
// opening the log (`dshmem verify`), so beside a writer that may have
// replaced the segment meanwhile (a scrub's rewrite, a salvage): the
// stream is read again first, and only the same damage (segment and
// offset) met again is recorded; else the error wraps
// ErrDamageNotConfirmed. A process holding the log open learns of the
// record only when it opens the log again. A stream already marked
// keeps its first damage: recorded is false.
func RecordQuarantine(dir string, p Problem) (recorded bool, err error) {
	if p.Repairable {
		return false, fmt.Errorf("record quarantine of %s: %s is a torn tail, not damage", p.Stream, p.Segment)
	}
	sdir := filepath.Join(dir, p.Stream)
	if _, ok, err := readQuarantine(OSFS{}, sdir); err != nil || ok {
		return false, err
	}
	again, _, err := verifyStreams(context.Background(), OSFS{}, dir, []string{p.Stream}, func(name string) ([]segRef, error) {
		return listSegments(OSFS{}, filepath.Join(dir, name))
	})
	if err != nil {
		return false, fmt.Errorf("record quarantine of %s: read it again: %w", p.Stream, err)
	}
	if !slices.ContainsFunc(again, func(q Problem) bool {
		return !q.Repairable && q.Segment == p.Segment && q.Offset == p.Offset
	}) {
		return false, fmt.Errorf("record quarantine of %s: %w at offset %d of %s", p.Stream, ErrDamageNotConfirmed, p.Offset, p.Segment)
	}
	d := Damage{Stream: p.Stream, Segment: p.Segment, Offset: p.Offset, Reason: p.Msg}
	if err := writeQuarantine(OSFS{}, sdir, d); err != nil {
		return false, err
	}
	return true, nil
}
