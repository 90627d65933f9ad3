package backup

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"dshmem/events"
	"dshmem/observer"
)

// checkOwner refuses a backup directory that holds another root's
// backup: bringing it up to this root would remove every file of the
// other root's log, which may be the only copy left of it (two roots
// beside each other share the default directory; a root made anew at
// the old path is another root).
//
// The backup is this root's when a stream both hold begins with the
// same event (its id and time): a root keeps the first event of each
// of its streams, so a moved root, or one restored from this backup, is
// recognised; a root that never wrote to the backup's streams, or whose
// streams began otherwise, is not. Streams whose first event cannot be
// read on either side (a damaged segment) are left out of the
// comparison.
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
	// hashes: only the first event of each stream is read.
	bl, err := events.OpenLogReadOnly(filepath.Join(dir, LogDir), events.Options{Trusted: m.Streams})
	if err != nil {
		return fmt.Errorf("backup: read the backup in %s to tell whose it is: %w (run 'dshmem backup verify %s')", dir, err, dir)
	}
	var differs []string
	for _, s := range streams {
		if eng.Log().LastSeq(s) == 0 {
			continue
		}
		mine, err := firstEvent(eng.Log(), s)
		if err != nil {
			continue
		}
		theirs, err := firstEvent(bl, s)
		if err != nil {
			continue
		}
		if mine.ID == theirs.ID && mine.Time == theirs.Time {
			return nil
		}
		differs = append(differs, s)
	}
	why := "it holds none of this root's streams"
	if len(differs) > 0 {
		why = fmt.Sprintf("its streams begin with other events than this root's (%s)", strings.Join(differs, ", "))
	}
	from := m.Root
	if from == "" {
		from = "another root"
	}
	return &DirError{Dir: dir, Msg: fmt.Sprintf(
		"backup directory %s holds the backup of %s, made %s, not of this root (%s): %s. "+
			"Backing this root up there would remove that backup's files. "+
			"Choose another directory with --to (or $%s); to get that backup back, 'dshmem restore-backup %s --root NEW-EMPTY-DIR'",
		dir, from, m.Created, eng.Root(), why, EnvDir, dir)}
}

var errFirst = errors.New("first event read")

// firstEvent reads the first event a log holds of stream.
func firstEvent(l *events.Log, stream string) (events.Envelope, error) {
	var first events.Envelope
	err := l.Scan(stream, 1, func(ev events.Envelope) error {
		first = ev
		return errFirst
	})
	if errors.Is(err, errFirst) {
		return first, nil
	}
	if err == nil {
		err = fmt.Errorf("stream %s holds no event", stream)
	}
	return first, err
}
