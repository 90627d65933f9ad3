package observer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"dshmem/events"
	"dshmem/sqlstore"
)

// Damage stays where it is: a stream whose log is damaged is quarantined
// (events/quarantine.go) and every other stream reads and writes as
// usual. The engine folds what precedes the damage, refuses events for
// the quarantined stream with an error naming the damage and `dshmem
// salvage`, and lists it (Quarantined) for stats, healthz and every
// answer that includes its scope. Salvage takes it out of quarantine.

// QuarantineDir is where Salvage moves the damaged segments of a stream
// (one directory per salvage, never deleted). Part of the on-disk layout.
const QuarantineDir = "quarantine"

// Quarantined lists the quarantined streams of the root, by name (none
// for a read-only engine, which opens no log).
func (e *Engine) Quarantined() []events.Damage {
	if e.log == nil {
		return nil
	}
	return e.log.Quarantined()
}

// quarantineSource is the log as the projector's catch-up reads it: a
// scan that meets damage quarantines the stream and ends there, so the
// events before the damage are folded and the other streams go on.
type quarantineSource struct{ log *events.Log }

func (q quarantineSource) Streams() []string { return q.log.Streams() }

func (q quarantineSource) Lost(stream string, first, last uint64) bool {
	return q.log.Lost(stream, first, last)
}

func (q quarantineSource) Scan(stream string, from uint64, fn func(events.Envelope) error) error {
	err := q.log.Scan(stream, from, fn)
	var ce *events.CorruptError
	if errors.As(err, &ce) {
		if qerr := q.log.Quarantine(events.Damage{Stream: stream, Segment: ce.Segment, Offset: ce.Offset, Reason: ce.Err.Error()}); qerr != nil {
			return qerr
		}
		return nil
	}
	return err
}

// refuseQuarantined rejects the items idx of a call when their stream
// is quarantined, each with an error naming the damage and the salvage
// command, and reports whether it did. The other streams of the call go on.
func (e *Engine) refuseQuarantined(stream string, idx []int, items []intakeItem, out []Outcome) bool {
	d, ok := e.log.QuarantinedStream(stream)
	if !ok {
		return false
	}
	msg := (&events.QuarantinedError{Damage: d}).Error()
	for _, i := range idx {
		n := items[i].outcome
		out[n].Status, out[n].Error, out[n].Stream = StatusRejected, &LineError{Line: items[i].line, Msg: msg}, stream
	}
	return true
}

// SalvageOptions configure Salvage.
type SalvageOptions struct {
	DryRun bool
	// Step is passed to events.Salvage (the crash tests kill there);
	// "rebuilt" follows once the index was dropped for the rebuild.
	Step func(step string)
	Log  events.Options // segment size of the new chain; FS unused
}

// Salvage takes stream out of quarantine (events.Salvage: every whole
// batch kept, the lost seqs reported, the damaged segments moved under
// <root>/quarantine/), then drops the index so that the next open
// rebuilds it, and the projections, from the log — and opens the root
// once to do it. It holds the writer lock throughout: with a server
// running it fails with a *LockedError.
func Salvage(ctx context.Context, root, stream string, opts SalvageOptions) (events.SalvageReport, error) {
	logDir, qDir := filepath.Join(root, LogDir), filepath.Join(root, QuarantineDir)
	if opts.DryRun {
		// Only reads: beside a server too.
		return events.Salvage(logDir, qDir, stream, events.SalvageOptions{KnownLast: indexCursor(root, stream), DryRun: true})
	}
	lk, err := lockRoot(root)
	if err != nil {
		return events.SalvageReport{Stream: stream}, err
	}
	finished, err := finishSalvages(root)
	if err != nil {
		lk.release()
		return events.SalvageReport{Stream: stream}, err
	}
	var rep events.SalvageReport
	if i := slices.IndexFunc(finished, func(r events.SalvageReport) bool { return r.Stream == stream }); i >= 0 {
		// A salvage of this stream a crash interrupted: now finished.
		rep = finished[i]
	} else {
		rep, err = events.Salvage(logDir, qDir, stream, events.SalvageOptions{
			SegmentSize: opts.Log.SegmentSize, KnownLast: indexCursor(root, stream), Step: opts.Step})
	}
	if err == nil && !rep.Resumed {
		err = dropIndex(root)
		if err == nil {
			if opts.Step != nil {
				opts.Step("dropped")
			}
			err = events.MarkSalvageDone(qDir, filepath.Base(filepath.Dir(rep.MovedTo)))
		}
	}
	if rerr := lk.release(); err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		return rep, err
	}
	// The rebuild: the index, then every projection, from the log.
	e, err := Open(ctx, root, Options{Log: events.Options{SegmentSize: opts.Log.SegmentSize}})
	if err != nil {
		return rep, fmt.Errorf("rebuild the index after the salvage: %w", err)
	}
	if opts.Step != nil {
		opts.Step("rebuilt")
	}
	return rep, e.Close()
}

// indexCursor is the seq the index folded of stream (0 without an
// index): the index folds only fsynced events, so the stream reached it.
func indexCursor(root, stream string) uint64 {
	path := filepath.Join(root, sqlstore.IndexFile)
	if _, err := os.Stat(path); err != nil {
		return 0
	}
	st, err := sqlstore.OpenReadOnly(path)
	if err != nil {
		return 0 // an index that does not open tells nothing; the seals still do
	}
	defer st.Close()
	cur, err := st.Cursors()
	if err != nil {
		return 0
	}
	return cur[stream]
}

// dropIndex removes index.db and its WAL files: the next open rebuilds
// it from the log. The index is derived; nothing is lost.
func dropIndex(root string) error {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(root, sqlstore.IndexFile+suffix)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("drop the index for its rebuild: %w", err)
		}
	}
	return nil
}

// finishSalvages finishes a salvage a crash interrupted (its renames,
// then the index dropped for the rebuild) before the log is opened.
func finishSalvages(root string) ([]events.SalvageReport, error) {
	return events.FinishSalvage(filepath.Join(root, LogDir), filepath.Join(root, QuarantineDir), func(string) error {
		return dropIndex(root)
	})
}
