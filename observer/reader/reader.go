package reader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/replay"
	"dshmem/sqlstore"
)

// Root is a root opened for reading only.
type Root struct {
	Dir string
	// Engine is the index, read-only; nil when there is none this build
	// can read (Unreadable says why an index that exists is not read).
	Engine     *observer.Engine
	Unreadable string
	// Log is a snapshot of the log as it was when opened.
	Log *events.Log
	// Folded is what the index had folded: its cursors, by stream.
	Folded map[string]uint64
}

// Open opens the root at dir for reading.
func Open(ctx context.Context, dir string) (*Root, error) {
	r := &Root{Dir: dir}
	if _, err := os.Stat(filepath.Join(dir, sqlstore.IndexFile)); err == nil {
		eng, err := observer.Open(ctx, dir, observer.Options{ReadOnly: true})
		if err != nil {
			return nil, err
		}
		cur, latest, err := eng.Store().SchemaVersions(ctx)
		if err != nil {
			eng.Close()
			return nil, err
		}
		switch {
		case cur < latest:
			// A writer's open migrates; a reader may not, and the old
			// schema lacks what this build reads.
			r.Unreadable = fmt.Sprintf("the index is of an older dshmem (schema version %d, this one reads %d): 'dshmem migrate up', or the next writer to open the root, brings it up to date", cur, latest)
		case cur > latest:
			r.Unreadable = fmt.Sprintf("the index is of a newer dshmem (schema version %d, this one reads %d): read it with that one", cur, latest)
		}
		if r.Unreadable != "" {
			eng.Close()
		} else {
			r.Engine = eng
			if r.Folded, err = eng.Store().Cursors(); err != nil {
				eng.Close()
				return nil, err
			}
		}
	}
	lg, err := events.OpenLogReadOnly(filepath.Join(dir, observer.LogDir), events.Options{Trusted: r.Folded})
	if err != nil {
		r.Close()
		return nil, err
	}
	r.Log = lg
	return r, nil
}

// Index is the read-only index, or nil when the root has none.
func (r *Root) Index() *sqlstore.Store {
	if r.Engine == nil {
		return nil
	}
	return r.Engine.Store()
}

// Close closes the log and the index.
func (r *Root) Close() error {
	var errs []error
	if r.Log != nil {
		errs = append(errs, r.Log.Close())
	}
	if r.Engine != nil {
		errs = append(errs, r.Engine.Close())
	}
	return errors.Join(errs...)
}

// Notes says what a read of this root leaves out, a sentence each: a
// torn tail, and what the index has not folded (behind) or holds beyond
// the log (ahead). Whether a writer holds the root changes what each
// means, so the writer lock is looked at only when there is something
// to say.
func (r *Root) Notes() []string {
	torn := r.Log.TornTails()
	quarantined := r.Log.Quarantined()
	var lags []replay.Lag
	if r.Engine != nil { // without an index, the command says what it does without one
		for _, l := range replay.Lags(r.Log, r.Folded) {
			if _, ok := r.Log.QuarantinedStream(l.Stream); !ok {
				lags = append(lags, l)
			}
		}
	}
	if len(torn) == 0 && len(lags) == 0 && len(quarantined) == 0 {
		return nil
	}
	var out []string
	for _, d := range quarantined {
		out = append(out, QuarantineNote(d))
	}
	pid := observer.HolderPID(r.Dir)
	for _, t := range torn {
		if pid != 0 {
			out = append(out, fmt.Sprintf("%s: process %d, which holds the root, is writing that batch; read up to the one before", t, pid))
		} else {
			out = append(out, fmt.Sprintf("%s (left by a crash); read up to the last whole batch and left as it is: the next writer to open the root, or 'dshmem repair', cuts it off and keeps a .broken copy", t))
		}
	}
	var behind uint64
	var first string
	for _, l := range lags {
		if l.Folded > l.Logged {
			out = append(out, fmt.Sprintf("the index is ahead of the log: %s (events were cut out of the log); the next writer to open the root rebuilds the index", l))
			continue
		}
		behind += l.Logged - l.Folded
		if first == "" {
			first = l.String()
		}
	}
	switch {
	case behind == 0:
	case pid != 0:
		out = append(out, fmt.Sprintf("the index has not folded the last %d event(s) of the log yet (%s); process %d, which holds the root, folds them as it goes; they are not in this answer", behind, first, pid))
	default:
		out = append(out, fmt.Sprintf("the index has not folded the last %d event(s) of the log (%s), and no process holds the root; they are not in this answer. The next writer to open the root ('dshmem serve', or a command that writes) folds them", behind, first))
	}
	return out
}

// NoIndex is the error of a command that needs the index of a root that
// has none it can read.
func (r *Root) NoIndex() error {
	st, err := r.Log.Stats()
	if err != nil {
		return err
	}
	path := filepath.Join(r.Dir, sqlstore.IndexFile)
	if r.Unreadable != "" {
		return fmt.Errorf("%s: %s", path, r.Unreadable)
	}
	if st.Events == 0 {
		return fmt.Errorf("%s holds no memory yet (no %s, no events in its log); add some with 'dshmem ingest', 'dshmem remember' or 'dshmem import'", r.Dir, sqlstore.IndexFile)
	}
	return fmt.Errorf("no index at %s: the log holds %d events that no writer has indexed yet; 'dshmem serve' or any command that writes builds it ('dshmem replay --out DIR' builds one elsewhere)", path, st.Events)
}

// OpenIndex opens the index of dir read-only for the commands that answer
// from it alone (search, recall, entries, history, sql): no lock, no
// write, no catch-up, so they see what a live writer has folded. The log
// is read only to say, in the notes returned, what the index does not
// hold yet.
func OpenIndex(ctx context.Context, dir string) (*observer.Engine, []string, error) {
	r, err := Open(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	if r.Engine == nil {
		err := r.NoIndex()
		r.Close()
		return nil, nil, err
	}
	notes := r.Notes()
	if err := r.Log.Close(); err != nil {
		r.Engine.Close()
		return nil, nil, err
	}
	return r.Engine, notes, nil
}

// QuarantineNote says, for people, that a stream is quarantined and
// what answers from it hold: every read command prints it beside an
// answer from a root with damage.
func QuarantineNote(d events.Damage) string {
	return fmt.Sprintf("stream %s is QUARANTINED (damage in %s at offset %d: %s): it is read-only and its log reads only up to seq %d; answers from it hold what was indexed before; run 'dshmem salvage %s'",
		d.Stream, d.Segment, d.Offset, d.Reason, d.Serves, d.Stream)
}
