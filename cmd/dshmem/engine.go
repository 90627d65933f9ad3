package main

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

// openEngine opens the root for writing and tells the user about any
// torn tail that was repaired on the way.
func openEngine(ctx context.Context, env *cliEnv) (*observer.Engine, error) {
	progress, done := catchUpProgress(env)
	eng, err := observer.Open(ctx, env.root, observer.Options{Progress: progress})
	done()
	if err != nil {
		return nil, err
	}
	for _, r := range eng.Repairs() {
		fmt.Fprintf(env.stderr, "dshmem: repaired a torn tail: %s\n", describeRepair(r))
	}
	if why := eng.Rebuilt(); why != "" {
		fmt.Fprintf(env.stderr, "dshmem: the %s; the index was rebuilt from the log\n", why)
	}
	return eng, nil
}

// requireRoot refuses commands that read or change existing memory when
// the root does not exist, instead of creating an empty one.
func requireRoot(env *cliEnv) error {
	if _, err := os.Stat(env.root); err != nil {
		return fmt.Errorf("no memory root at %s: pass --root DIR, set DSH_MEMORY_ROOT, or create one with 'dshmem ingest'", env.root)
	}
	return nil
}

// openExisting is openEngine for a root that must already exist.
func openExisting(ctx context.Context, env *cliEnv) (*observer.Engine, error) {
	if err := requireRoot(env); err != nil {
		return nil, err
	}
	return openEngine(ctx, env)
}

// readRoot is a root opened for reading only: the log with
// events.OpenLogReadOnly and, when there is one, the index read-only.
// Opening takes no lock and writes, creates and repairs nothing in the
// root (SQLite may add its own empty index.db-wal and index.db-shm, as
// any reader of a WAL database does when no writer has them open), so
// every read command runs beside a live 'dshmem serve'.
type readRoot struct {
	root string
	eng  *observer.Engine // the index, read-only; nil when there is none this build can read
	// unreadable says why an index that exists is not read (its schema
	// is another build's); "" when it is read or there is none.
	unreadable string
	log        *events.Log // read-only: a snapshot of the log when it was opened
	// folded is what the index had folded (its cursors), read before the
	// log was opened: a writer folds only what it fsynced, so the log
	// holds at least that much.
	folded map[string]uint64
}

// openRead opens root for reading. A torn tail is read up to its last
// whole batch and left on disk; it and an index that has not folded the
// whole log are told on stderr (notes).
func openRead(ctx context.Context, env *cliEnv) (*readRoot, error) {
	if err := requireRoot(env); err != nil {
		return nil, err
	}
	r := &readRoot{root: env.root}
	if _, err := os.Stat(filepath.Join(env.root, sqlstore.IndexFile)); err == nil {
		eng, err := observer.Open(ctx, env.root, observer.Options{ReadOnly: true})
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
			r.unreadable = fmt.Sprintf("the index is of an older dshmem (schema version %d, this one reads %d): 'dshmem migrate up', or the next writer to open the root, brings it up to date", cur, latest)
		case cur > latest:
			r.unreadable = fmt.Sprintf("the index is of a newer dshmem (schema version %d, this one reads %d): read it with that one", cur, latest)
		}
		if r.unreadable != "" {
			eng.Close()
		} else {
			r.eng = eng
			if r.folded, err = eng.Store().Cursors(); err != nil {
				eng.Close()
				return nil, err
			}
		}
	}
	// What the index folded was fsynced first: the log's open takes those
	// batches by their headers (events.Options.Trusted).
	lg, err := events.OpenLogReadOnly(filepath.Join(env.root, observer.LogDir), events.Options{Trusted: r.folded})
	if err != nil {
		r.Close()
		return nil, err
	}
	r.log = lg
	return r, nil
}

// store is the read-only index, or nil when the root has none.
func (r *readRoot) store() *sqlstore.Store {
	if r.eng == nil {
		return nil
	}
	return r.eng.Store()
}

// Close closes the log and the index.
func (r *readRoot) Close() error {
	var errs []error
	if r.log != nil {
		errs = append(errs, r.log.Close())
	}
	if r.eng != nil {
		errs = append(errs, r.eng.Close())
	}
	return errors.Join(errs...)
}

// notes tells on stderr what a read of this root leaves out: a torn
// tail, and what the index has not folded (behind) or holds beyond the
// log (ahead). Whether a writer holds the root changes what it means,
// so the writer lock is looked at only when there is something to say.
func (r *readRoot) notes(env *cliEnv) {
	torn := r.log.TornTails()
	var lags []replay.Lag
	if r.eng != nil { // without an index, the command says what it does without one
		lags = replay.Lags(r.log, r.folded)
	}
	if len(torn) == 0 && len(lags) == 0 {
		return
	}
	pid := observer.HolderPID(r.root)
	for _, t := range torn {
		if pid != 0 {
			fmt.Fprintf(env.stderr, "dshmem: %s: process %d, which holds the root, is writing that batch; read up to the one before\n", t, pid)
		} else {
			fmt.Fprintf(env.stderr, "dshmem: %s (left by a crash); read up to the last whole batch and left as it is: the next writer to open the root, or 'dshmem repair', cuts it off and keeps a .broken copy\n", t)
		}
	}
	var behind uint64
	var first string
	for _, l := range lags {
		if l.Folded > l.Logged {
			fmt.Fprintf(env.stderr, "dshmem: the index is ahead of the log: %s (events were cut out of the log); the next writer to open the root rebuilds the index\n", l)
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
		fmt.Fprintf(env.stderr, "dshmem: the index has not folded the last %d event(s) of the log yet (%s); process %d, which holds the root, folds them as it goes; they are not in this answer\n", behind, first, pid)
	default:
		fmt.Fprintf(env.stderr, "dshmem: the index has not folded the last %d event(s) of the log (%s), and no process holds the root; they are not in this answer. The next writer to open the root ('dshmem serve', or a command that writes) folds them\n", behind, first)
	}
}

// openReader opens the index read-only for the commands that answer
// from it alone (search, recall, entries, history, sql): no lock, no
// write, no catch-up, so they run beside a live server and see what it
// has folded. The log is opened only to tell (notes) what the index
// does not hold yet.
func openReader(ctx context.Context, env *cliEnv) (*observer.Engine, error) {
	r, err := openRead(ctx, env)
	if err != nil {
		return nil, err
	}
	if r.eng == nil {
		err := noIndex(r)
		r.Close()
		return nil, err
	}
	r.notes(env)
	if err := r.log.Close(); err != nil {
		r.eng.Close()
		return nil, err
	}
	return r.eng, nil
}

// noIndex is the error of a command that needs the index of a root that
// has none.
func noIndex(r *readRoot) error {
	st, err := r.log.Stats()
	if err != nil {
		return err
	}
	path := filepath.Join(r.root, sqlstore.IndexFile)
	if r.unreadable != "" {
		return fmt.Errorf("%s: %s", path, r.unreadable)
	}
	if st.Events == 0 {
		return fmt.Errorf("%s holds no memory yet (no %s, no events in its log); add some with 'dshmem ingest', 'dshmem remember' or 'dshmem import'", r.root, sqlstore.IndexFile)
	}
	return fmt.Errorf("no index at %s: the log holds %d events that no writer has indexed yet; 'dshmem serve' or any command that writes builds it ('dshmem replay --out DIR' builds one elsewhere)", path, st.Events)
}

// catchUpProgress reports catch-up on a terminal only; call done
// afterwards to end the progress line.
func catchUpProgress(env *cliEnv) (progress func(stream string, seq uint64), done func()) {
	if !isTerminal(env.stderr) {
		return nil, func() {}
	}
	printed := false
	return func(stream string, seq uint64) {
			printed = true
			fmt.Fprintf(env.stderr, "\rindexing %s up to seq %d…", stream, seq)
		}, func() {
			if printed {
				fmt.Fprintln(env.stderr)
			}
		}
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// describeRepair says what a torn-tail repair did, for people.
func describeRepair(r events.Repaired) string {
	return fmt.Sprintf("%s: cut to %d bytes (%d torn bytes dropped); the original is kept as %s", r.Segment, r.Offset, r.Dropped, r.Broken)
}

// workDir is the directory a --cwd flag names: made absolute against the
// current directory when it is relative (--cwd ., --cwd ../proj), or the
// current directory itself when the flag is empty. An absolute path,
// POSIX or Windows, is kept as given.
func workDir(flagValue string) (string, error) {
	if flagValue != "" && observer.IsAbsCwd(flagValue) {
		return flagValue, nil
	}
	if flagValue == "" {
		flagValue = "."
	}
	abs, err := filepath.Abs(flagValue)
	if err != nil {
		return "", fmt.Errorf("find the directory %s: %w (pass an absolute --cwd DIR)", flagValue, err)
	}
	return abs, nil
}

// scopeNamed names the scope of the workspace stream s for people: its
// directory (from scope.json's record) and the stream, or s alone.
func scopeNamed(eng *observer.Engine, s string) string {
	return observer.DescribeStream(s, eng.ScopeDir(s))
}
