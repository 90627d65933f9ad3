package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"dshmem/markdown"
	"dshmem/observer"
	"dshmem/replay"
)

func init() {
	register(&command{
		name:    "restore",
		summary: "write a Markdown file as it was at a seq or time, from the log",
		usage: `restore PATH [--at SEQ|TIME] [--out FILE]

Renders the projection PATH (relative to the root: global.md, index.md,
knowledge/TOPIC.md, sessions/YYYY-MM-DD.md, scopes/ws-ID/memory_summary.md,
scopes/ws-ID/scope.json, scopes/ws-ID/summary_history/SEQ.md) as it was
at a point, from the log alone, and writes it to stdout, or with --out to
FILE (atomically: temporary file, fsync, rename).

--at is where to stop (default: now, the end of the log):
  SEQ   for a file fed by one stream (global.md, index.md, knowledge/ by
        the global stream; scopes/ws-ID/ by that workspace's stream)
  TIME  for sessions/YYYY-MM-DD.md, fed by several streams: an RFC 3339
        time; blocks whose event time is at or before it are kept

PATH may not be absolute, hold "..", or leave the root through a symlink.
To undo damage to a file in place: dshmem restore PATH --out ROOT/PATH.

It reads the root only (the one file it writes is --out's): it takes no
lock and writes, repairs and catches up nothing there, so it runs beside
a live 'dshmem serve'. A torn tail is left as it is and the log read up
to its last whole batch.
`,
		run: runRestore,
	})
}

func runRestore(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["restore"]
	fs := newFlags(c)
	atFlag := fs.String("at", "", "SEQ (stream files) or RFC 3339 TIME (sessions files); default: now")
	out := fs.String("out", "", "write to FILE atomically instead of stdout")
	pos, err := env.parseFlags(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"needs exactly one PATH, relative to the root"}
	}
	var at replay.Point
	if *atFlag != "" {
		if n, err := strconv.ParseUint(*atFlag, 10, 64); err == nil {
			if n == 0 {
				return usageError{"--at 0: seqs start at 1"}
			}
			at.Seq = n
		} else if t, err := time.Parse(time.RFC3339Nano, *atFlag); err == nil {
			if t.Before(observer.MinEventTime) || !t.Before(observer.MaxEventTime) {
				return usageError{fmt.Sprintf("--at %s is outside the years %d–%d events carry: leave --at out for the end of the log", *atFlag, observer.MinEventTime.Year(), observer.MaxEventTime.Year()-1)}
			}
			at.Time = t
		} else {
			return usageError{fmt.Sprintf("--at %q is neither a seq (a positive integer) nor an RFC 3339 time such as 2026-08-18T18:00:00+08:00", *atFlag)}
		}
	}
	if err := requireRoot(env); err != nil {
		return err
	}
	rel, err := replay.ValidatePath(env.root, pos[0])
	if err != nil {
		return err
	}
	r, err := openRead(ctx, env)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, t := range r.Log.TornTails() {
		fmt.Fprintf(env.stderr, "dshmem: %s; read up to the last whole batch\n", t)
	}
	data, err := replay.Restore(ctx, r.Log, rel, at, replay.RestoreOptions{Index: r.Index()})
	if err != nil {
		return err
	}
	if *out == "" {
		_, err := env.stdout.Write(data)
		return err
	}
	if err := markdown.WriteFileAtomic(*out, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(env.stderr, "restored %s (%d bytes) to %s\n", rel, len(data), *out)
	return nil
}
