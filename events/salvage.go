package events

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Salvage takes a damaged (quarantined) stream out of quarantine: it
// keeps every whole batch whose frame matches its checksum — before and
// after the damage — in a new segment chain, records the seqs it could
// not keep in gap records (kind 3; see doc.go, "Salvage"), and moves the
// damaged segments aside, never deleting them. See salvage_journal.go
// for the steps and how a crash between them is finished.

// ErrNotDamaged is returned by Salvage for a stream with no damage to
// salvage: Verify finds none and it carries no quarantine marker.
var ErrNotDamaged = errors.New("events: stream is not damaged")

// SalvageOptions configure Salvage. The zero value works.
type SalvageOptions struct {
	// SegmentSize rolls the new segments (0 → 64 MiB, as Options).
	SegmentSize int64
	// KnownLast is a seq the stream is known to have reached (the
	// index's cursor: the index folds only what was fsynced). Seqs after
	// the last whole batch up to it are lost, recorded as a gap at the
	// end, so that they are never given to other events.
	KnownLast uint64
	// DryRun reports what Salvage would keep and lose, changing nothing.
	DryRun bool
	// Now names the quarantine directory (zero: the current time).
	Now time.Time
	// Step, when set, is told each step once it is durable ("written",
	// "ready", "moved", "swapped"): the crash tests kill there.
	Step func(step string)
}

// SeqRange is a run of seqs, both ends included.
type SeqRange struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
}

func (r SeqRange) String() string {
	if r.First == r.Last {
		return fmt.Sprint(r.First)
	}
	return fmt.Sprintf("%d..%d", r.First, r.Last)
}

// SalvageReport says what Salvage kept, lost and moved.
type SalvageReport struct {
	Stream string `json:"stream"`
	DryRun bool   `json:"dryRun,omitempty"`
	// Resumed: this salvage was interrupted (a crash) and is now finished.
	Resumed bool `json:"resumed,omitempty"`
	// Damage is what Verify found in the stream before the salvage.
	Damage []string `json:"damage"`
	// Batches and Events kept, whole, in the new chain.
	Batches int    `json:"batches"`
	Events  uint64 `json:"events"`
	// Lost are the seqs no whole batch held: each is a gap record now.
	Lost       []SeqRange `json:"lost"`
	LostEvents uint64     `json:"lostEvents"`
	// Last is the stream's last seq after the salvage; the next event
	// appended gets Last+1.
	Last uint64 `json:"last"`
	// MovedTo is the directory that holds the damaged segments (and the
	// journal); nothing in it is ever deleted by dshmem.
	MovedTo  string   `json:"movedTo,omitempty"`
	Segments []string `json:"segments,omitempty"` // new segment files
}

// salvageItem is one record of the new chain: a whole batch, byte for
// byte as found (record and frame), or a gap.
type salvageItem struct {
	h   BatchHeader
	raw []byte // the batch's record and frame; nil for a gap
}

// salvagePlan is the new chain of a stream.
type salvagePlan struct {
	items  []salvageItem
	report SalvageReport
}

// Salvage salvages stream in the log directory logDir, moving its damage
// into a new directory under quarantineDir. No Log may have logDir open
// for writing (the caller holds the root's writer lock). It first
// finishes a salvage a crash interrupted (FinishSalvage). A stream with
// no damage is refused with ErrNotDamaged and left as it is. A dry run
// only reads: it may run beside the writer.
func Salvage(logDir, quarantineDir, stream string, opts SalvageOptions) (SalvageReport, error) {
	fsys := FS(OSFS{})
	if !opts.DryRun {
		if _, err := FinishSalvage(logDir, quarantineDir, nil); err != nil {
			return SalvageReport{Stream: stream}, err
		}
	}
	plan, err := planSalvage(fsys, logDir, stream, opts)
	if err != nil || opts.DryRun {
		return plan.report, err
	}
	return runSalvage(fsys, logDir, quarantineDir, stream, plan, opts)
}

// planSalvage reads every segment of the stream and decides the new
// chain: every whole batch, by seq, linked to the one before it, and a
// gap wherever seqs are missing.
func planSalvage(fsys FS, logDir, stream string, opts SalvageOptions) (salvagePlan, error) {
	plan := salvagePlan{report: SalvageReport{Stream: stream, DryRun: opts.DryRun, Damage: []string{}, Lost: []SeqRange{}}}
	if !ValidStream(stream) {
		return plan, fmt.Errorf("salvage stream %q: not a stream name", stream)
	}
	sdir := filepath.Join(logDir, stream)
	if _, err := fsys.Stat(sdir); err != nil {
		return plan, fmt.Errorf("salvage stream %s: %w", stream, err)
	}
	problems, _, err := verifyStreams(context.Background(), fsys, logDir, []string{stream}, func(name string) ([]segRef, error) {
		return listSegments(fsys, sdir)
	})
	if err != nil {
		return plan, fmt.Errorf("salvage stream %s: %w", stream, err)
	}
	for _, p := range problems {
		if !p.Repairable {
			plan.report.Damage = append(plan.report.Damage, p.String())
		}
	}
	marked, hasMarker, err := readQuarantine(fsys, sdir)
	if err != nil {
		return plan, fmt.Errorf("salvage stream %s: %w", stream, err)
	}
	if len(plan.report.Damage) == 0 {
		if !hasMarker {
			return plan, fmt.Errorf("salvage stream %s: %w: verify finds no damage in it and it is not quarantined; nothing was changed", stream, ErrNotDamaged)
		}
		plan.report.Damage = append(plan.report.Damage, "quarantined: "+marked.String())
	}

	segs, err := listSegments(fsys, sdir)
	if err != nil {
		return plan, fmt.Errorf("salvage stream %s: %w", stream, err)
	}
	var found []salvageItem
	known := opts.KnownLast
	for _, seg := range segs {
		b, err := os.ReadFile(seg.path)
		if err != nil {
			return plan, fmt.Errorf("salvage stream %s: %w", stream, err)
		}
		items, last := wholeRecords(b, stream)
		found = append(found, items...)
		known = max(known, last)
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].h.FirstSeq < found[j].h.FirstSeq })

	var (
		next  = uint64(1)
		chain [32]byte
		r     = &plan.report
	)
	gap := func(first, last uint64, resume [32]byte) {
		h := BatchHeader{FirstSeq: first, Count: uint32(last - first + 1), Checksum: resume, Prev: chain, Gap: true}
		plan.items = append(plan.items, salvageItem{h: h})
		r.Lost = append(r.Lost, SeqRange{first, last})
		r.LostEvents += last - first + 1
		next, chain = last+1, resume
	}
	for _, it := range found {
		h := it.h
		if h.FirstSeq < next {
			continue // a copy of what is kept already, or overlapping it
		}
		if h.FirstSeq == next && h.Prev != chain {
			// In the right place but not linked to the batch before it
			// (spliced in from elsewhere): not kept; a gap takes its seqs.
			continue
		}
		if h.FirstSeq > next {
			gap(next, h.FirstSeq-1, h.Prev)
		}
		plan.items = append(plan.items, it)
		if !h.Gap {
			r.Batches++
			r.Events += uint64(h.Count)
		} else {
			r.Lost = append(r.Lost, SeqRange{h.FirstSeq, h.LastSeq()}) // lost by an earlier salvage
			r.LostEvents += uint64(h.Count)
		}
		next, chain = h.LastSeq()+1, h.Next()
	}
	if known >= next {
		// Lost at the end: the chain resumes at a hash of the gap itself.
		var rec [recordSize]byte
		BatchHeader{FirstSeq: next, Count: uint32(known - next + 1), Prev: chain}.put(rec[:], kindGap)
		gap(next, known, sha256.Sum256(rec[:recordSize-4]))
	}
	mergeRanges(&r.Lost)
	r.Last = next - 1
	return plan, nil
}

// mergeRanges joins adjacent ranges of a sorted list.
func mergeRanges(rs *[]SeqRange) {
	var out []SeqRange
	for _, x := range *rs {
		if n := len(out); n > 0 && out[n-1].Last+1 >= x.First {
			out[n-1].Last = max(out[n-1].Last, x.Last)
			continue
		}
		out = append(out, x)
	}
	if out == nil {
		out = []SeqRange{}
	}
	*rs = out
}

// wholeRecords finds every whole batch of stream in the bytes of a
// segment, wherever it lies — the frame matching its checksum, every
// line decoding with its seq and stream — and the gaps of an earlier
// salvage. It also returns the last seq that the seals and the
// damaged batches whose records are intact say the stream reached.
func wholeRecords(b []byte, stream string) ([]salvageItem, uint64) {
	var (
		items []salvageItem
		last  uint64
	)
	for i := 0; i+recordFrameSize <= len(b); {
		j := bytes.Index(b[i:], magicBytes)
		if j < 0 {
			break
		}
		p := i + j
		size, ok := recordLen(b[p:])
		if !ok || p+size > len(b) {
			i = p + 1
			continue
		}
		h, kind, err := parseRecord(b[p : p+size])
		if err != nil {
			i = p + 1
			continue
		}
		switch kind {
		case kindSeal:
			last = max(last, h.FirstSeq+uint64(h.Count)-1)
			i = p + size
			continue
		case kindGap:
			items = append(items, salvageItem{h: h})
			last = max(last, h.LastSeq())
			i = p + size
			continue
		}
		last = max(last, h.LastSeq())
		end := p + size + int(h.Length)
		if end > len(b) || sha256.Sum256(b[p+size:end]) != h.Checksum || !batchDecodes(b[p+size:end], h, stream) {
			i = p + 1
			continue
		}
		items = append(items, salvageItem{h: h, raw: bytes.Clone(b[p:end])})
		i = end
	}
	return items, last
}

// batchDecodes checks a frame whose sha256 matched: it decompresses, it
// holds Count lines, and each is an envelope of stream with its seq.
func batchDecodes(frame []byte, h BatchHeader, stream string) bool {
	content, err := sharedDecoder().DecodeAll(frame, nil)
	if err != nil || len(content) == 0 || content[len(content)-1] != '\n' {
		return false
	}
	lines := strings.Split(string(content[:len(content)-1]), "\n")
	if len(lines) != int(h.Count) {
		return false
	}
	for i, line := range lines {
		e, err := Unmarshal([]byte(line))
		if err != nil || e.Seq != h.FirstSeq+uint64(i) || e.Stream != stream {
			return false
		}
	}
	return true
}
