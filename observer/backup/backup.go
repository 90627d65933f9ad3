package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
)

// EnvDir names the environment variable with the default backup
// directory.
const EnvDir = "DSH_MEMORY_BACKUP_ROOT"

// DefaultDir is where a root's backups go when no directory is given:
// $DSH_MEMORY_BACKUP_ROOT, else memory-backup/ beside the root.
func DefaultDir(root string) string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		abs = root
	}
	return filepath.Join(filepath.Dir(abs), "memory-backup")
}

// Options configure Run. The zero value backs up to DefaultDir.
type Options struct {
	To  string    // the backup directory; "" → DefaultDir(root)
	Now time.Time // the time of the maintenance/backup event; zero: the wall clock
}

// Report says what a backup did. Its JSON form is what
// `dshmem backup --json` prints.
type Report struct {
	To          string            `json:"to"`
	Generation  uint64            `json:"generation"`
	Unchanged   bool              `json:"unchanged"` // nothing but backup records came since the last run: nothing copied
	Copied      []string          `json:"copied"`    // files written this run
	CopiedBytes int64             `json:"copiedBytes"`
	Removed     []string          `json:"removed"` // files the new manifest no longer names
	Files       int               `json:"files"`   // files the backup holds, the index snapshot included
	Bytes       int64             `json:"bytes"`
	Snapshot    bool              `json:"snapshot"` // a new index snapshot was taken
	Streams     map[string]uint64 `json:"streams"`  // last seq of each stream held
	Cursors     map[string]uint64 `json:"cursors"`  // what the index snapshot reflects
	EventSeq    uint64            `json:"eventSeq"` // seq of the maintenance/backup event in the global stream
	Took        time.Duration     `json:"tookNs"`
}

// Run backs eng's root up into o.To (see the package documentation):
// a new index snapshot and the changed segments when anything but
// backup records came since the last run, nothing otherwise; then the
// maintenance/backup event. It is safe while eng ingests.
func Run(ctx context.Context, eng *observer.Engine, o Options) (Report, error) {
	t0 := time.Now()
	if eng.ReadOnly() {
		return Report{}, fmt.Errorf("backup: %w: a backup records itself in the log", observer.ErrReadOnly)
	}
	if q := eng.Quarantined(); len(q) > 0 {
		// Its log and its index disagree until salvaged: a backup would
		// copy neither faithfully.
		return Report{}, fmt.Errorf("backup: %w; back up after the salvage (it keeps the damaged segments under %s/)", &events.QuarantinedError{Damage: q[0]}, observer.QuarantineDir)
	}
	dir, err := backupDir(eng.Root(), o.To)
	if err != nil {
		return Report{}, err
	}
	rep := Report{To: dir, Copied: []string{}, Removed: []string{}}
	// A directory that is not a backup is refused before anything,
	// even the lock file, is put into it.
	if _, err := ReadManifest(dir); errors.Is(err, ErrNoManifest) {
		if err := checkEmpty(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return rep, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return rep, fmt.Errorf("create backup directory %s: %w", dir, err)
	}
	lk, err := lockDir(dir)
	if err != nil {
		return rep, err
	}
	defer lk.release()
	old, err := ReadManifest(dir)
	if errors.Is(err, ErrNoManifest) {
		old = nil
		if err := checkEmpty(dir); err != nil {
			return rep, err
		}
	} else if err != nil {
		return rep, err
	} else if err := checkOwner(ctx, eng, dir, old); err != nil {
		return rep, err
	}
	if err := removeTemps(dir); err != nil {
		return rep, err
	}

	changed := old == nil || old.Index == nil
	if !changed {
		if changed, err = changedSince(ctx, eng, dir, old); err != nil {
			return rep, err
		}
	}
	m := old
	if changed {
		if m, err = copyRoot(ctx, eng, dir, old, &rep); err != nil {
			return rep, err
		}
	} else {
		rep.Unchanged = true
	}
	rep.Generation, rep.Streams, rep.Cursors = m.Generation, m.Streams, m.Index.Cursors
	rep.Files, rep.Bytes = len(m.Files)+1, m.Bytes()

	ev, err := record(ctx, eng, rep, o.Now)
	if err != nil {
		return rep, err
	}
	rep.EventSeq = ev
	rep.Took = time.Since(t0)
	return rep, nil
}

// backupDir resolves the backup directory and refuses one that would
// hold the root or lie inside it.
func backupDir(root, to string) (string, error) {
	if to == "" {
		to = DefaultDir(root)
	}
	dir, err := filepath.Abs(to)
	if err != nil {
		return "", fmt.Errorf("backup directory %s: %w", to, err)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("root %s: %w", root, err)
	}
	if within(dir, absRoot) || within(absRoot, dir) {
		return "", &DirError{Dir: dir, Msg: fmt.Sprintf("backup directory %s and the root %s overlap: a backup must live outside the root, and the root outside it; choose another --to", dir, absRoot)}
	}
	return dir, nil
}

// DirError is a backup directory Run refuses: one that overlaps the
// root, or holds other files and no manifest. Nothing was written.
type DirError struct {
	Dir string
	Msg string
}

func (e *DirError) Error() string { return e.Msg }

// checkEmpty refuses a directory without a manifest that holds files
// of its own: a mistyped --to must not get a backup scattered into it.
func checkEmpty(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read backup directory %s: %w", dir, err)
	}
	for _, e := range ents {
		if e.Name() == LockFile || strings.Contains(e.Name(), tmpSuffix) || e.Name() == LogDir {
			continue
		}
		return &DirError{Dir: dir, Msg: fmt.Sprintf("backup directory %s holds %s but no %s: it is not a dshmem backup; choose a new or empty directory with --to", dir, e.Name(), ManifestFile)}
	}
	return nil
}

// removeTemps removes the copies an interrupted run left.
func removeTemps(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.Contains(d.Name(), tmpSuffix) { // a copy, or SQLite's journal of one
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("remove a copy an interrupted backup left: %w", err)
			}
		}
		return nil
	})
}

// changedSince reports whether the root holds anything the backup
// described by m lacks, other than maintenance/backup events: a stream
// added or removed, an event of another type past the seq m holds, a
// sealed segment rewritten. It runs once every appended event is folded,
// so the index answers for the log.
func changedSince(ctx context.Context, eng *observer.Engine, dir string, m *Manifest) (bool, error) {
	if _, err := os.Stat(filepath.Join(dir, m.Index.Path)); err != nil {
		return true, nil // the snapshot is gone: take a new one
	}
	changed := false
	err := eng.Settled(func() error {
		live := eng.Log().Streams()
		for s := range m.Streams {
			if !slices.Contains(live, s) {
				changed = true // a stream went (a purged scope): the backup must lose it too
				return nil
			}
		}
		for _, s := range live { // a stream the backup lacks counts from seq 0
			segs, last := eng.Log().Snapshot(s)
			if last < m.Streams[s] {
				changed = true // a stream the backup has more of than the root: copy again
				return nil
			}
			n, err := eng.Store().CountEventsAfter(ctx, s, m.Streams[s], events.TypeMaintenanceBackup)
			if err != nil {
				return err
			}
			if n > 0 {
				changed = true
				return nil
			}
			for _, seg := range segs {
				f := m.file(segmentRel(seg))
				if f == nil || !f.Sealed {
					continue // the active segment grew by backup records only
				}
				st, err := os.Stat(seg.Path)
				if err != nil {
					return err
				}
				if st.Size() != f.Size || st.ModTime().UnixNano() != f.SourceMtime {
					changed = true
					return nil
				}
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("compare the root with the backup: %w", err)
	}
	return changed, nil
}

// segmentRel is the path of a segment's copy in a backup.
func segmentRel(seg events.SegmentInfo) string {
	return path.Join(LogDir, seg.Stream, filepath.Base(seg.Path))
}

// copyRoot snapshots the index, then copies every segment the backup
// lacks as far as it is committed, and commits the new manifest. The
// order is the consistency of the backup: the log is listed after the
// snapshot was taken, so it holds every event the snapshot reflects.
func copyRoot(ctx context.Context, eng *observer.Engine, dir string, old *Manifest, rep *Report) (*Manifest, error) {
	gen := uint64(1)
	if old != nil {
		gen = old.Generation + 1
	}
	m := &Manifest{Format: ManifestFormat, Generation: gen, Created: time.Now().UTC().Format(time.RFC3339Nano),
		Root: eng.Root(), Streams: map[string]uint64{}, Files: []File{}}

	// 1. The index, as of one commit.
	idxName := fmt.Sprintf("index-%020d.db", gen)
	idxTmp := filepath.Join(dir, idxName+tmpSuffix)
	cursors, err := eng.Store().VacuumInto(ctx, idxTmp)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if err := os.Chmod(idxTmp, backupFileMode); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	st, err := os.Stat(idxTmp)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	// The snapshot is hashed while the log is copied: both wait on the
	// disk, and the log's listing must not wait for the hash.
	type hashed struct {
		sum string
		err error
	}
	idxSum := make(chan hashed, 1)
	go func() {
		sum, err := hashPrefix(idxTmp, st.Size())
		idxSum <- hashed{sum, err}
	}()
	m.Index = &IndexSnapshot{Path: idxName, Size: st.Size(), Cursors: cursors}
	rep.Snapshot = true
	rep.Copied = append(rep.Copied, idxName)
	rep.CopiedBytes += st.Size()
	renames := [][2]string{{idxTmp, filepath.Join(dir, idxName)}}

	// 2. The log, after the snapshot.
	for _, s := range eng.Log().Streams() {
		segs, last := eng.Log().Snapshot(s)
		m.Streams[s] = last
		for _, seg := range segs {
			f, copied, err := copySegment(dir, seg, old.file(segmentRel(seg)))
			if err != nil {
				<-idxSum
				return nil, fmt.Errorf("backup: %w", err)
			}
			m.Files = append(m.Files, f)
			if copied {
				rep.Copied = append(rep.Copied, f.Path)
				rep.CopiedBytes += f.Size
				dst := filepath.Join(dir, filepath.FromSlash(f.Path))
				renames = append(renames, [2]string{dst + tmpSuffix, dst})
			}
		}
	}
	h := <-idxSum
	if h.err != nil {
		return nil, fmt.Errorf("backup: %w", h.err)
	}
	m.Index.SHA256 = h.sum
	for s, c := range cursors {
		if c > m.Streams[s] {
			// Cannot happen while folds follow fsyncs; refuse to write a
			// backup whose restore would find its index ahead of its log.
			return nil, fmt.Errorf("backup: the index snapshot reflects stream %s up to seq %d but the log copied ends at seq %d; nothing was committed, run the backup again", s, c, m.Streams[s])
		}
	}

	// 3. Commit: the copies into place, then the manifest, then what it
	// no longer names goes.
	dirs := map[string]bool{dir: true}
	for _, r := range renames {
		if err := os.Rename(r[0], r[1]); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
		dirs[filepath.Dir(r[1])] = true
	}
	for _, d := range sortedKeys(dirs) {
		if err := syncDir(d); err != nil {
			return nil, fmt.Errorf("backup: sync %s: %w", d, err)
		}
	}
	if err := m.write(dir); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	removed, err := removeUnlisted(dir, m)
	rep.Removed = append(rep.Removed, removed...)
	if err != nil {
		return nil, fmt.Errorf("backup: the backup is complete, but removing what it no longer holds failed: %w", err)
	}
	return m, nil
}

// copySegment copies seg into dir (to its temporary name) unless prev,
// the manifest's entry for it, already holds the same bytes.
func copySegment(dir string, seg events.SegmentInfo, prev *File) (File, bool, error) {
	rel := segmentRel(seg)
	st, err := os.Stat(seg.Path)
	if err != nil {
		return File{}, false, err
	}
	f := File{Path: rel, Size: seg.Size, Sealed: seg.Sealed, SourceMtime: st.ModTime().UnixNano()}
	dst := filepath.Join(dir, filepath.FromSlash(rel))
	if prev != nil && prev.Size == seg.Size {
		if bst, err := os.Stat(dst); err == nil && bst.Size() == prev.Size {
			if prev.Sealed && seg.Sealed && prev.SourceMtime == f.SourceMtime {
				f.SHA256 = prev.SHA256 // a sealed segment is never written again
				return f, false, nil
			}
			sum, err := hashPrefix(seg.Path, seg.Size)
			if err != nil {
				return File{}, false, err
			}
			if sum == prev.SHA256 {
				f.SHA256 = sum
				return f, false, nil
			}
		}
	}
	sum, err := copyPrefix(seg.Path, seg.Size, dst+tmpSuffix, "", backupFileMode)
	if err != nil {
		return File{}, false, err
	}
	f.SHA256 = sum
	return f, true, nil
}

// removeUnlisted removes the files under dir/log and the index
// snapshots that m does not name, and empty stream directories.
func removeUnlisted(dir string, m *Manifest) ([]string, error) {
	keep := map[string]bool{}
	for _, f := range m.Files {
		keep[f.Path] = true
	}
	var removed []string
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "index-") && strings.HasSuffix(e.Name(), ".db") && e.Name() != m.Index.Path {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return removed, err
			}
			removed = append(removed, e.Name())
		}
	}
	logDir := filepath.Join(dir, LogDir)
	streams, err := os.ReadDir(logDir)
	if errors.Is(err, os.ErrNotExist) {
		return removed, nil
	}
	if err != nil {
		return removed, err
	}
	for _, sd := range streams {
		if !sd.IsDir() {
			continue
		}
		sdir := filepath.Join(logDir, sd.Name())
		segs, err := os.ReadDir(sdir)
		if err != nil {
			return removed, err
		}
		left := 0
		for _, f := range segs {
			rel := path.Join(LogDir, sd.Name(), f.Name())
			if keep[rel] {
				left++
				continue
			}
			if err := os.RemoveAll(filepath.Join(sdir, f.Name())); err != nil {
				return removed, err
			}
			removed = append(removed, rel)
		}
		if left == 0 {
			if err := os.Remove(sdir); err != nil {
				return removed, err
			}
		}
	}
	if len(removed) > 0 {
		if err := syncDir(dir); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// record appends the maintenance/backup event of a run to the global
// stream and returns its seq.
func record(ctx context.Context, eng *observer.Engine, rep Report, now time.Time) (uint64, error) {
	raw, err := payload.Marshal(payload.MaintenanceBackup{To: rep.To, Generation: rep.Generation, Copied: rep.Copied,
		CopiedBytes: rep.CopiedBytes, Files: rep.Files, Bytes: rep.Bytes, Snapshot: rep.Snapshot, Streams: rep.Streams})
	if err != nil {
		return 0, fmt.Errorf("record the backup: %w", err)
	}
	id, err := observer.RandomHex()
	if err != nil {
		return 0, err
	}
	env := events.Envelope{V: events.CurrentVersion, ID: "dshmem:backup:" + id, Type: events.TypeMaintenanceBackup,
		Time: observer.EventTime(now), Stream: observer.GlobalStream, Data: raw}
	return appendOwn(ctx, eng, env)
}

// appendOwn sends one event of the engine's own through intake and
// returns its seq.
func appendOwn(ctx context.Context, eng *observer.Engine, env events.Envelope) (uint64, error) {
	line, err := events.Marshal(&env)
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", env.Type, err)
	}
	_, outs, err := eng.Ingest(ctx, [][]byte{line})
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", env.Type, err)
	}
	if o := outs[0]; o.Status != observer.StatusAppended {
		msg := o.Status
		if o.Error != nil {
			msg = o.Error.Error()
		}
		return 0, fmt.Errorf("write %s: %s", env.Type, msg)
	}
	return outs[0].Seq, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
