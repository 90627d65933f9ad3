package main

import (
	"context"
	"errors"
	"fmt"

	"dshmem/observer"
)

func init() {
	register(&command{
		name:    "forget",
		summary: "hide a memory entry from recall and summaries",
		usage: `forget [--reason R] ID

Appends a memory/forget event for entry ID (m-…, as 'dshmem entries'
lists them) to the entry's own stream. A forgotten entry never reaches
recall or a summary again; its versions stay in 'dshmem history ID',
and its words on disk until 'dshmem scrub' erases them.
An unknown id, or an entry already forgotten, is an error and nothing is
written.
`,
		run: runForget,
	})
}

func runForget(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["forget"]
	fs := newFlags(c)
	reason := fs.String("reason", "", "why the entry is forgotten (kept in its history)")
	id, err := env.parseEntryID(c, fs, args)
	if err != nil {
		return err
	}
	eng, err := openExisting(ctx, env)
	if err != nil {
		return forwardForget(ctx, env, err, id, *reason) // a server holds the root (forward.go)
	}
	defer eng.Close()
	en, err := eng.Forget(ctx, id, *reason)
	switch {
	case errors.Is(err, observer.ErrUnknownEntry):
		return errNoEntry(env, id)
	case errors.Is(err, observer.ErrEntryForgotten):
		return errEntryForgotten(id)
	case err != nil:
		return err
	}
	if err := eng.Close(); err != nil {
		return fmt.Errorf("close root: %w", err)
	}
	fmt.Fprintf(env.stdout, "%s\nforgot %q (%s)\n", en.ID, en.Title, en.Scope)
	return nil
}

// errNoEntry and errEntryForgotten are what forget and history say,
// run here or by a server.
func errNoEntry(env *cliEnv, id string) error {
	return fmt.Errorf("no entry %s in %s: list the ids with 'dshmem entries'", id, env.root)
}

func errEntryForgotten(id string) error {
	return fmt.Errorf("entry %s is already forgotten (see 'dshmem history %s')", id, id)
}
