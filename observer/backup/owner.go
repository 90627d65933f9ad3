package backup

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/sqlstore"
)

// checkOwner refuses a backup directory that holds another root's
// backup, or events this root does not hold: bringing it up to this
// root would remove them from it, and they may be the only copy left
// (two roots beside each other share the default directory; a root made
// anew at the old path is another root; a salvage may have cut what the
// backup still holds).
//
// Every stream the backup holds must be this root's, as it was then:
//   - a stream this root holds holds the backup's events: the same
//     first event and the same event at the end (id and time; ids alone
//     can agree across roots, as an import's do), and it reaches the
//     backup's last seq;
//   - a stream this root lacks was purged here (the global stream
//     records each purge).
//
// A moved root, or one restored from the backup, passes; a stream whose
// events cannot be read on either side fails, as nobody can tell. The
// event compared at the end is the one at the seq the backup's index
// snapshot reflects (its last seq when the snapshot reflects them all,
// as it does when nothing was written during that backup).
func checkOwner(ctx context.Context, eng *observer.Engine, dir string, m *Manifest) error {
	streams := make([]string, 0, len(m.Streams))
	for s := range m.Streams {
		streams = append(streams, s)
	}
	slices.Sort(streams)
	if len(streams) == 0 {
		return nil // nothing of another root to lose
	}
	// Both sides answer from their indexes, two look-ups a stream: the
	// root's, and the backup's snapshot, which reflects each stream up to
	// its cursor, so the event compared at the end is the one there. A
	// seq an index lacks is read from its log, which walks the segment.
	mine := ownerSide{idx: eng.Store(), log: func() (*events.Log, error) { return eng.Log(), nil }}
	var backupLog *events.Log
	theirs := ownerSide{log: sync.OnceValues(func() (*events.Log, error) {
		// The manifest's seqs are trusted, as Restore trusts them after
		// its hashes: only the events compared are read.
		l, err := events.OpenLogReadOnly(filepath.Join(dir, LogDir), events.Options{Trusted: m.Streams})
		backupLog = l
		return l, err
	})}
	if m.Index != nil {
		if snap, err := sqlstore.OpenReadOnly(filepath.Join(dir, m.Index.Path)); err == nil {
			defer snap.Close()
			theirs.idx = snap
		}
	}
	defer func() {
		if backupLog != nil {
			backupLog.Close()
		}
	}()
	var (
		purged                      map[string]bool
		differ, lacks, behind, lost []string
		err                         error
	)
	for _, s := range streams {
		last, held := m.Streams[s], eng.Log().LastSeq(s)
		if held == 0 {
			if purged == nil {
				if purged, err = purgedStreams(ctx, eng.Store()); err != nil {
					return fmt.Errorf("backup: read this root's purges to tell whose backup %s is: %w", dir, err)
				}
			}
			if !purged[s] {
				lacks = append(lacks, s)
			}
			continue
		}
		if held < last {
			behind = append(behind, fmt.Sprintf("%s up to seq %d, this root up to %d", s, last, held))
			continue
		}
		end := last
		if c := m.cursor(s); c > 0 {
			end = c
		}
		same, gone, err := sameEvents(ctx, mine, theirs, s, 1, end)
		switch {
		case err != nil:
			lost = append(lost, fmt.Sprintf("%s (%v)", s, err))
		case gone != 0:
			behind = append(behind, fmt.Sprintf("%s seq %d, which this root no longer holds", s, gone))
		case !same:
			differ = append(differ, s)
		}
	}
	var why []string
	if len(differ) > 0 {
		why = append(why, "its streams hold other events than this root's ("+strings.Join(differ, ", ")+")")
	}
	if len(lacks) > 0 {
		why = append(why, "it holds streams this root never had, nor purged ("+strings.Join(lacks, ", ")+")")
	}
	if len(behind) > 0 {
		why = append(why, "it holds events this root does not ("+strings.Join(behind, "; ")+"): restore them from it ('dshmem restore-backup' into a new root) before backing this root up over it")
	}
	if len(lost) > 0 {
		why = append(why, "whose it is cannot be told: events of "+strings.Join(lost, ", ")+" cannot be read (run 'dshmem backup verify "+dir+"' and 'dshmem verify')")
	}
	if len(why) == 0 {
		return nil
	}
	from := m.Root
	if from == "" {
		from = "a root"
	}
	return &DirError{Dir: dir, Msg: fmt.Sprintf(
		"backup directory %s holds the backup of %s, made %s, and this root (%s) is not that root as it was: %s. "+
			"Backing this root up there would remove what only that backup holds. "+
			"Choose another directory with --to (or $%s); to get that backup back, 'dshmem restore-backup %s --root NEW-EMPTY-DIR'",
		dir, from, m.Created, eng.Root(), strings.Join(why, "; "), EnvDir, dir)}
}

// cursor is the seq up to which the backup's index snapshot reflects
// stream; 0 without one.
func (m *Manifest) cursor(stream string) uint64 {
	if m.Index == nil {
		return 0
	}
	return min(m.Index.Cursors[stream], m.Streams[stream])
}

// ownerSide reads the event at a seq of a stream: from the index when it
// holds it, else from the log.
type ownerSide struct {
	idx *sqlstore.Store
	log func() (*events.Log, error)
}

// at returns the id and time of the event at seq of stream; a seq a
// salvage lost has an empty id.
func (o ownerSide) at(ctx context.Context, stream string, seq uint64) (id, at string, err error) {
	if o.idx != nil {
		if id, at, ok, err := o.idx.EventAt(ctx, stream, seq); err == nil && ok {
			return id, at, nil
		}
	}
	l, err := o.log()
	if err != nil {
		return "", "", err
	}
	ev, err := eventAt(l, stream, seq)
	return ev.ID, ev.Time, err
}

// sameEvents reports whether the root (mine) and the backup (theirs)
// hold the same events (id and time) at seqs a and b of stream; gone is
// a seq the backup holds and the root lost (a salvage's gap).
func sameEvents(ctx context.Context, mine, theirs ownerSide, stream string, a, b uint64) (same bool, gone uint64, err error) {
	for _, seq := range []uint64{a, b} {
		idM, atM, err := mine.at(ctx, stream, seq)
		if err != nil {
			return false, 0, err
		}
		idT, atT, err := theirs.at(ctx, stream, seq)
		if err != nil {
			return false, 0, err
		}
		if idM == "" && idT != "" {
			return false, seq, nil
		}
		if idM != idT || atM != atT {
			return false, 0, nil
		}
	}
	return true, 0, nil
}

var errFound = errors.New("event found")

// eventAt reads the event at seq of stream from a log; a seq a salvage
// lost (or none) is an empty envelope.
func eventAt(l *events.Log, stream string, seq uint64) (events.Envelope, error) {
	var at events.Envelope
	err := l.Scan(stream, seq, func(ev events.Envelope) error {
		if ev.Seq == seq {
			at = ev
		}
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		return at, err
	}
	return at, nil
}

// purgedStreams lists the workspace streams whose purge the root's
// global stream records.
func purgedStreams(ctx context.Context, st *sqlstore.Store) (map[string]bool, error) {
	evs, err := st.Events(ctx, sqlstore.EventFilter{Stream: observer.GlobalStream, Type: events.TypeScopePurge})
	if err != nil {
		return nil, err
	}
	purged := map[string]bool{}
	for _, ev := range evs {
		var p payload.ScopePurge
		if err := payload.Unmarshal(ev.Data, &p); err != nil {
			return nil, fmt.Errorf("scope/purge %s: %w", ev.ID, err)
		}
		purged[p.Key] = true
	}
	return purged, nil
}
