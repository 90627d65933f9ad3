package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"dshmem/observer"
	"dshmem/observer/reader"
	"dshmem/sqlstore/vectors"
)

// openEngine opens the root for writing and tells the user about any
// torn tail that was repaired on the way.
func openEngine(ctx context.Context, env *cliEnv) (*observer.Engine, error) {
	progress, done := catchUpProgress(env)
	opts := observer.Options{Progress: progress}
	opts.Log.FS = logPauseFS(env.stderr) // nil: the OS; set only by crash tests
	eng, err := observer.Open(ctx, env.root, opts)
	done()
	if err != nil {
		return nil, err
	}
	for _, r := range eng.Repairs() {
		fmt.Fprintf(env.stderr, "dshmem: repaired a torn tail: %s\n", r)
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

// openRead opens the root for reading only (observer/reader): no lock,
// no write, so every read command runs beside a live 'dshmem serve'.
func openRead(ctx context.Context, env *cliEnv) (*reader.Root, error) {
	if err := requireRoot(env); err != nil {
		return nil, err
	}
	return reader.Open(ctx, env.root)
}

// printNotes tells on stderr what a read leaves out (reader.Root.Notes).
func printNotes(env *cliEnv, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(env.stderr, "dshmem: %s\n", n)
	}
}

// openReader opens the index read-only for the commands that answer
// from it alone (search, recall, entries, history, sql) and tells on
// stderr what it does not hold yet.
func openReader(ctx context.Context, env *cliEnv) (*observer.Engine, error) {
	if err := requireRoot(env); err != nil {
		return nil, err
	}
	eng, notes, err := reader.OpenIndex(ctx, env.root)
	if err != nil {
		return nil, err
	}
	printNotes(env, notes)
	return eng, nil
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

// loadEncoder loads and verifies the installed sentence encoder for a
// process that fills vectors (serve, replay): nil when it is not
// installed, or, told on stderr, when it does not verify or load.
func loadEncoder(env *cliEnv) *vectors.Model {
	m, err := vectors.LoadInstalled(true)
	if err != nil {
		fmt.Fprintf(env.stderr, "dshmem: %v\n", err)
		return nil
	}
	return m
}
