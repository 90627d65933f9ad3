package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"
)

// Point is where Restore stops. A stream file (global layer, workspace
// files) takes Seq, a seq of its stream; a sessions file takes Time. The
// zero Point means now: the end of the log.
type Point struct {
	Seq  uint64
	Time time.Time
}

// RestoreOptions configure Restore. The zero value works.
type RestoreOptions struct {
	// Index, when set, is the live index (read-only will do): it says
	// which of the events it folded hold a day's blocks, so a sessions
	// file is restored by reading only those stretches of the streams,
	// and whatever it has not folded yet (past its cursors).
	Index *sqlstore.Store
}

var errStop = errors.New("stop")

// Restore returns the bytes the projection rel (a path ValidatePath
// accepted) had at the point: what the projector wrote there after
// folding the log up to it.
func Restore(ctx context.Context, log Log, rel string, at Point, opts RestoreOptions) ([]byte, error) {
	info, ok := projector.ParsePath(rel)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a projection dshmem writes", ErrBadPath, rel)
	}
	if info.Kind == projector.KindDay {
		return restoreDay(ctx, log, info.Day, at, opts)
	}
	return restoreStream(ctx, log, rel, info, at)
}

// filteredScanner is a Log that can decode only the lines a reader
// wants (*events.Log).
type filteredScanner interface {
	ScanFiltered(stream string, fromSeq uint64, keep func(line []byte) bool, fn func(events.Envelope) error) error
}

// The log takes the filtered path; a change there must not silently
// fall back to decoding every line.
var _ filteredScanner = (*events.Log)(nil)

// restoreStream folds the one stream a file depends on, up to the seq
// asked, into a temporary index and renders the file from it.
func restoreStream(ctx context.Context, log Log, rel string, info projector.PathInfo, at Point) ([]byte, error) {
	if !at.Time.IsZero() {
		return nil, fmt.Errorf("%w: %s is fed by the stream %s alone; give --at a seq of that stream, not a time", ErrBadPoint, rel, info.Scope)
	}
	last := log.LastSeq(info.Scope)
	seq := at.Seq
	if info.Kind == projector.KindHistory {
		if seq != 0 && seq != info.Seq {
			return nil, fmt.Errorf("%w: %s is the summary as of seq %d; it takes no other --at", ErrBadPoint, rel, info.Seq)
		}
		seq = info.Seq
	}
	if seq == 0 {
		seq = last
	}
	if seq == 0 {
		return nil, fmt.Errorf("%w: the stream %s has no events", ErrNoSuchFile, info.Scope)
	}
	if seq > last {
		return nil, fmt.Errorf("%w: the stream %s ends at seq %d; --at %d is past it", ErrBadPoint, info.Scope, last, seq)
	}

	// Only the events that can change entries, and the first one with a
	// cwd (the workspace's scopes row), change what these files show.
	var keep []events.Envelope
	cwdSeen := false
	// A log that can filter raw lines skips decoding the conversation,
	// which is nearly all of a stream: the byte test is a superset of
	// what the callback below keeps.
	scan := log.Scan
	if fl, ok := log.(filteredScanner); ok {
		scan = func(stream string, from uint64, fn func(events.Envelope) error) error {
			return fl.ScanFiltered(stream, from, func(line []byte) bool {
				return bytes.Contains(line, []byte(`"type":"memory/`)) || !cwdSeen && bytes.Contains(line, []byte(`"cwd":`))
			}, fn)
		}
	}
	err := scan(info.Scope, 1, func(ev events.Envelope) error {
		if ev.Seq > seq {
			return errStop
		}
		first := !cwdSeen && ev.Cwd != "" && projector.IsWorkspace(ev.Stream)
		if first {
			cwdSeen = true
		}
		if first || projector.ChangesEntries(ev.Type) {
			ev.Data = slices.Clone(ev.Data)
			keep = append(keep, ev)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("restore %s: read stream %s: %w", rel, info.Scope, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp("", "dshmem-restore-")
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", rel, err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlstore.Open(filepath.Join(dir, IndexFile))
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", rel, err)
	}
	defer st.Close()
	p := projector.New(st)
	p.Sparse = true // only the events that change these files; entry ids derive from their own seqs
	if len(keep) > 0 {
		if err := p.Fold(ctx, keep); err != nil {
			return nil, fmt.Errorf("restore %s: %w", rel, err)
		}
	}
	if err := st.SetCursor(ctx, info.Scope, seq); err != nil {
		return nil, fmt.Errorf("restore %s: %w", rel, err)
	}
	target := rel
	if info.Kind == projector.KindHistory {
		target = projector.SummaryPath(info.Scope)
	}
	r, ok, err := p.Render(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", rel, err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s did not exist at seq %d of %s", ErrNoSuchFile, rel, seq, info.Scope)
	}
	return r.Data, nil
}

// restoreDay collects the day's blocks with event time at or before the
// point from every stream that has one, and renders the day file.
func restoreDay(ctx context.Context, log Log, day string, at Point, opts RestoreOptions) ([]byte, error) {
	rel := projector.DayPath(day)
	if at.Seq != 0 {
		return nil, fmt.Errorf("%w: %s is fed by several streams; give --at a time (RFC 3339), not a seq", ErrBadPoint, rel)
	}
	var spans []sqlstore.BlockSpan
	if opts.Index != nil {
		var err error
		if spans, err = opts.Index.BlockSpans(ctx, day); err != nil {
			return nil, fmt.Errorf("restore %s: %w", rel, err)
		}
		// The index knows only what it folded: a writer may not have
		// folded its last appends yet, or a crash left them unfolded.
		folded, err := opts.Index.Cursors()
		if err != nil {
			return nil, fmt.Errorf("restore %s: locate its blocks: %w", rel, err)
		}
		for _, s := range log.Streams() {
			if f, last := folded[s], log.LastSeq(s); f < last {
				spans = append(spans, sqlstore.BlockSpan{Stream: s, From: f + 1, To: last})
			}
		}
	} else {
		for _, s := range log.Streams() {
			spans = append(spans, sqlstore.BlockSpan{Stream: s, From: 1, To: log.LastSeq(s)})
		}
	}
	var blocks []projector.Block
	for _, sp := range spans {
		err := log.Scan(sp.Stream, sp.From, func(ev events.Envelope) error {
			if ev.Seq > sp.To {
				return errStop
			}
			d, b, ok := projector.BlockOf(&ev)
			if ok && d == day && (at.Time.IsZero() || b.At <= unixNanoClamped(at.Time)) {
				blocks = append(blocks, b)
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return nil, fmt.Errorf("restore %s: read stream %s: %w", rel, sp.Stream, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if len(blocks) == 0 {
		when := "now"
		if !at.Time.IsZero() {
			when = "at " + at.Time.Format(time.RFC3339Nano)
		}
		return nil, fmt.Errorf("%w: %s has no compaction or session summary %s", ErrNoSuchFile, rel, when)
	}
	return projector.RenderDay(day, blocks).Data, nil
}

// unixNanoClamped is t.UnixNano without its overflow: a time past 2262
// is after every event, one before 1678 before every event.
func unixNanoClamped(t time.Time) int64 {
	switch {
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	}
	return t.UnixNano()
}
