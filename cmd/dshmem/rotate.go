package main

import (
	"context"
	"fmt"
	"time"

	"dshmem/observer/backup"
	"dshmem/observer/httpapi"
)

func init() {
	register(&command{
		name:    "rotate",
		summary: "move session files older than 30 days into sessions/archive/",
		usage: `rotate [--json]

Moves sessions/YYYY-MM-DD.md files of days more than 30 days ago into
sessions/archive/. It appends a maintenance/rotate event naming the
cut-off day to the global stream, and the fold of that event moves the
files, so 'dshmem replay' moves the same ones and 'replay --verify'
agrees. Blocks of older days that arrive later (an import) go straight
to the archive. With nothing to move it writes nothing. 'dshmem serve'
rotates on its own schedule; with a server holding the root this
command is run by it.

Examples:
  dshmem rotate
  dshmem rotate --json
`,
		run: runRotate,
	})
}

func runRotate(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["rotate"]
	fs := newFlags(c)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	var rep backup.RotateReport
	eng, err := openExisting(ctx, env)
	if err != nil {
		if err := onServer(ctx, env, err, sayRunBy, "/v1/rotate", httpapi.RotateAPIRequest{}, &rep, nil); err != nil {
			return err
		}
	} else {
		defer eng.Close()
		if rep, err = backup.Rotate(ctx, eng, time.Time{}); err != nil {
			return err
		}
		if err := eng.Close(); err != nil {
			return fmt.Errorf("close root: %w", err)
		}
	}
	if *asJSON {
		return printJSON(env, rep)
	}
	if len(rep.Days) == 0 {
		fmt.Fprintf(env.stdout, "nothing to rotate: no session file of a day before %s is left in sessions/\n", rep.Before)
		return nil
	}
	fmt.Fprintf(env.stdout, "moved %d session files of days before %s into sessions/archive/ (%s … %s); maintenance/rotate seq %d of the global stream\n",
		len(rep.Days), rep.Before, rep.Days[0], rep.Days[len(rep.Days)-1], rep.EventSeq)
	return nil
}
