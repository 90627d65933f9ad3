package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"dshmem/observer"
)

func init() {
	register(&command{
		name:    "ingest",
		summary: "append JSONL events to the log and index them",
		usage: `ingest [--json] [FILE|-]

Reads one JSON envelope per line (from FILE, or standard input when FILE
is - or absent), validates each, redacts credential-shaped text, resolves
its stream from cwd (or the session's cwd; none means "global"), drops ids
already in that stream, and appends the rest with an fsync before they
are acknowledged. Envelopes carry no seq: dshmem assigns it.

Each line: {"id":"…","type":"user/message","time":"2026-08-18T10:00:00Z",
"session":"s1","cwd":"/home/u/proj","data":{"text":"…"}}

Input of any size is read as a stream and sent in calls of at most
8 MiB and 5,000 lines (one fsync and one index commit each), in input
order, two in flight (one validated while the one before it is written);
when 'dshmem serve' holds the root, the calls go to it, which keeps them
in that order. On a terminal a progress line shows events done,
events/s, bytes read and the time left. After a call fails, no more are
sent.

Each rejected line is reported on stderr with its line number in the
whole input and its field. Prints {"appended":N,"duplicates":M,"rejected":K}
on stdout, with or without --json; exits 1 when any line was rejected.
`,
		run: runIngest,
	})
}

func runIngest(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["ingest"]
	fs := newFlags(c)
	fs.Bool("json", false, "the summary is JSON in any case; accepted like every command's --json")
	pos, err := env.parseFlags(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageError{"takes at most one FILE"}
	}
	var in io.Reader = env.stdin
	name := "standard input"
	var size int64
	if len(pos) == 1 && pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return fmt.Errorf("%w: pass a JSONL file, or - (or nothing) for standard input", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return fmt.Errorf("%s is a directory: pass a JSONL file, or - (or nothing) for standard input; 'dshmem import dsh DIR' reads a tree of DSH session logs", pos[0])
		}
		in, name = f, pos[0]
	}
	if f, ok := in.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
	}
	eng, err := openEngine(ctx, env)
	if err != nil {
		return forwardIngest(ctx, env, err, in, name, size) // a server holds the root (forward.go)
	}
	defer eng.Close()
	m := newMeter(env, "ingest:", size)
	res, err := eng.IngestStream(ctx, in, observer.StreamOptions{
		Progress: func(events, read int64) { m.set(events, read) },
		Rejected: func(o observer.Outcome) { reportRejected(env, m, name, o.Error) },
	})
	m.done()
	if res != (observer.IngestResult{}) || err == nil {
		b, _ := json.Marshal(res)
		fmt.Fprintln(env.stdout, string(b))
	}
	if err != nil {
		return fmt.Errorf("ingest %s: %w", name, err)
	}
	if cerr := eng.Close(); cerr != nil {
		return fmt.Errorf("close root: %w", cerr)
	}
	if res.Rejected > 0 {
		return exitError{1}
	}
	return nil
}

// reportRejected prints one rejected line on stderr, above the progress
// line when there is one.
func reportRejected(env *cliEnv, m *meter, name string, le *observer.LineError) {
	if le == nil {
		return
	}
	if m != nil {
		m.say("%s: %v", name, le)
		return
	}
	fmt.Fprintf(env.stderr, "%s: %v\n", name, le)
}
