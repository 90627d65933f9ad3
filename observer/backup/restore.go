package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/sqlstore"
)

// RestoreReport says what Restore did. Its JSON form is what
// `dshmem restore-backup --json` prints.
type RestoreReport struct {
	Root       string            `json:"root"`
	From       string            `json:"from"`
	Generation uint64            `json:"generation"`
	Files      int               `json:"files"` // segments copied
	Bytes      int64             `json:"bytes"`
	Streams    map[string]uint64 `json:"streams"`
	Events     uint64            `json:"events"`
	// Index says where the index came from: "snapshot" (caught up from
	// the log by the events past its cursors) or "rebuilt" (from the
	// log, when the snapshot was unusable: Note says why).
	Index    string        `json:"index"`
	CaughtUp uint64        `json:"caughtUp"` // events folded past the snapshot's cursors
	Note     string        `json:"note,omitempty"`
	Took     time.Duration `json:"tookNs"`
}

// Restore rebuilds a root from the backup in dir: it copies the log
// (checking every byte against the manifest), puts the index snapshot
// in place, and opens the root, which folds whatever the log holds past
// the snapshot and writes every projection. A root that exists and is
// not empty is refused before anything is written; on any failure what
// Restore made is removed again.
func Restore(ctx context.Context, dir, root string) (RestoreReport, error) {
	t0 := time.Now()
	rep := RestoreReport{Root: root, From: dir}
	m, err := ReadManifest(dir)
	if err != nil {
		return rep, err
	}
	rep.Generation, rep.Streams = m.Generation, m.Streams
	absDir, _ := filepath.Abs(dir)
	absRoot, _ := filepath.Abs(root)
	if within(absRoot, absDir) || within(absDir, absRoot) {
		return rep, fmt.Errorf("restore into %s: the root and the backup %s overlap; give --root a directory outside the backup", root, dir)
	}
	created, err := claimRoot(root)
	if err != nil {
		return rep, err
	}
	ok := false
	defer func() {
		if !ok {
			undoRoot(root, created)
		}
	}()

	for _, f := range m.Files {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		src := filepath.Join(dir, filepath.FromSlash(f.Path))
		dst := filepath.Join(root, filepath.FromSlash(f.Path)) // log/<stream>/<segment>
		if _, err := copyPrefix(src, f.Size, dst, f.SHA256, restoreFileMode); err != nil {
			return rep, fmt.Errorf("restore: %w; nothing was restored (run 'dshmem backup verify %s')", err, dir)
		}
		rep.Files++
		rep.Bytes += f.Size
	}
	for _, d := range []string{filepath.Join(root, LogDir), root} {
		if err := syncDir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			return rep, fmt.Errorf("restore: sync %s: %w", d, err)
		}
	}
	problems, checked, err := events.VerifyCounted(filepath.Join(root, LogDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("restore: verify the copied log: %w", err)
	}
	if len(problems) > 0 {
		return rep, fmt.Errorf("restore: the copied log does not verify (%s, and %d more); nothing was restored", problems[0], len(problems)-1)
	}
	rep.Events = checked.Events

	rep.Index = "rebuilt"
	var cursors map[string]uint64
	if m.Index == nil {
		rep.Note = "the manifest names no index snapshot"
	} else {
		src := filepath.Join(dir, m.Index.Path)
		dst := filepath.Join(root, sqlstore.IndexFile)
		if _, err := copyPrefix(src, m.Index.Size, dst, m.Index.SHA256, restoreFileMode); err != nil {
			rep.Note = fmt.Sprintf("the index snapshot is unusable (%v); the index was rebuilt from the log", err)
		} else {
			rep.Index, cursors = "snapshot", m.Index.Cursors
		}
	}
	eng, err := observer.Open(ctx, root, observer.Options{})
	if err != nil {
		return rep, fmt.Errorf("restore: open the restored root: %w", err)
	}
	if why := eng.Rebuilt(); why != "" {
		rep.Index, rep.Note = "rebuilt", "the index snapshot did not fit the log ("+why+"); the index was rebuilt from the log"
	}
	if rep.Index == "snapshot" {
		now, err := eng.Store().Cursors()
		if err == nil {
			for s, c := range now {
				rep.CaughtUp += c - min(c, cursors[s])
			}
		}
	}
	err = eng.WriteFiles(ctx)
	if cerr := eng.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rep, fmt.Errorf("restore: write the projections: %w", err)
	}
	ok = true
	rep.Took = time.Since(t0)
	return rep, nil
}

// claimRoot makes sure root is new or an empty directory and creates
// it; it reports whether it created it.
func claimRoot(root string) (created bool, err error) {
	ents, err := os.ReadDir(root)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(root, 0o700); err != nil {
			return false, fmt.Errorf("restore: create %s: %w", root, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("restore into %s: %w", root, err)
	case len(ents) > 0:
		return false, fmt.Errorf("restore into %s: the directory is not empty (it holds %s): restore-backup never overwrites a root; give --root a new or empty directory, or move %s aside", root, ents[0].Name(), root)
	}
	return false, nil
}

// undoRoot removes what a failed restore made in root.
func undoRoot(root string, created bool) {
	if created {
		os.RemoveAll(root)
		return
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(root, e.Name()))
	}
}
