package backup

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
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
//     first event and the same event at the backup's last seq (id and
//     time; ids alone can agree across roots, as an import's do), and it
//     reaches that seq;
//   - a stream this root lacks was purged here (the global stream
//     records each purge).
//
// A moved root, or one restored from the backup, passes; a stream whose
// events cannot be read on either side fails, as nobody can tell.
func checkOwner(eng *observer.Engine, dir string, m *Manifest) error {
	streams := make([]string, 0, len(m.Streams))
	for s := range m.Streams {
		streams = append(streams, s)
	}
	slices.Sort(streams)
	if len(streams) == 0 {
		return nil // nothing of another root to lose
	}
	// The manifest's seqs are trusted, as Restore trusts them after its
	// hashes: only the events compared are read.
	bl, err := events.OpenLogReadOnly(filepath.Join(dir, LogDir), events.Options{Trusted: m.Streams})
	if err != nil {
		return fmt.Errorf("backup: read the backup in %s to tell whose it is: %w (run 'dshmem backup verify %s')", dir, err, dir)
	}
	defer bl.Close()
	mine := eng.Log()
	var (
		purged                      map[string]bool
		differ, lacks, behind, lost []string
	)
	for _, s := range streams {
		last, held := m.Streams[s], mine.LastSeq(s)
		if held == 0 {
			if purged == nil {
				if purged, err = purgedStreams(mine); err != nil {
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
		same, gone, err := sameEvents(mine, bl, s, 1, last)
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

// sameEvents reports whether two logs, mine and the backup's, hold the
// same events (id and time) at seqs a and b of stream; gone is a seq
// the backup holds and mine lost (a salvage's gap).
func sameEvents(mine, backup *events.Log, stream string, a, b uint64) (same bool, gone uint64, err error) {
	for _, seq := range []uint64{a, b} {
		em, err := eventAt(mine, stream, seq)
		if err != nil {
			return false, 0, err
		}
		eb, err := eventAt(backup, stream, seq)
		if err != nil {
			return false, 0, err
		}
		if em.ID == "" && eb.ID != "" {
			return false, seq, nil
		}
		if em.ID != eb.ID || em.Time != eb.Time {
			return false, 0, nil
		}
	}
	return true, 0, nil
}

var errFound = errors.New("event found")

// eventAt reads the event at seq of stream; a seq a salvage lost (or
// none) is an event of its own: an empty envelope.
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

// purgedStreams lists the workspace streams whose purge the log's
// global stream records.
func purgedStreams(l *events.Log) (map[string]bool, error) {
	purged := map[string]bool{}
	marker := []byte(`"` + events.TypeScopePurge + `"`)
	err := l.ScanFiltered(observer.GlobalStream, 1, func(line []byte) bool { return bytes.Contains(line, marker) },
		func(ev events.Envelope) error {
			if ev.Type != events.TypeScopePurge {
				return nil
			}
			var p payload.ScopePurge
			if err := payload.Unmarshal(ev.Data, &p); err != nil {
				return fmt.Errorf("scope/purge %s: %w", ev.ID, err)
			}
			purged[p.Key] = true
			return nil
		})
	return purged, err
}
