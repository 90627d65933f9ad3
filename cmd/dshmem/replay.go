package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/replay"
)

func init() {
	register(&command{
		name:    "replay",
		summary: "rebuild index.db and every Markdown file from the log; --verify compares",
		usage: `replay [--out DIR] | replay --verify [--keep] [--vectors=false]

Folds every event of every stream, from the log alone, into a new
index.db and writes every projection (global.md, index.md, knowledge/,
scopes/, sessions/) into DIR: --out, or else a new temporary directory.
DIR must be new or empty.

With --verify the rebuild is made aside, in a temporary directory, and
compared with the live root byte for byte: every projection file and a
canonical dump of the index. Each file that differs is listed (a
damaged sessions file, a hand edit not yet synced, a missing file) and
the exit status is 1. 'dshmem restore' puts a file back; 'dshmem sync'
reads hand edits into the log. What is compared is the replay of what
the live index had folded when verify started. With no process holding
the root, events the index has not folded (a crash between an append
and its fold) are a difference too; beside a writer they are its work
in flight and only noted. If the writer folds more while verify runs,
the report says so: a difference may then be only that, so run it again
when the root is idle.

With the sentence encoder installed ('dshmem model install'), the
rebuilt index gets its vectors too (every core encodes), and --verify
compares them: a vector made from the same text must equal its replay
byte for byte; rows only one side has are counted (the server fills
them in the background). --vectors=false leaves them out.

Both only read the root: they take no lock and write, repair and catch
up nothing there, so they run beside a live 'dshmem serve'. A torn tail
is left as it is and the log read up to its last whole batch.
`,
		run: runReplay,
	})
}

func runReplay(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["replay"]
	fs := newFlags(c)
	out := fs.String("out", "", "directory to rebuild into (new or empty; default: a new temporary directory)")
	verify := fs.Bool("verify", false, "rebuild aside and compare with the live root; exit 1 on any difference")
	keep := fs.Bool("keep", false, "with --verify: keep the rebuilt root and print where it is")
	encode := fs.Bool("vectors", true, "rebuild the vectors too when the sentence encoder is installed (false: leave them to the server's background fill)")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	if *verify && *out != "" {
		return usageError{"--out and --verify do not go together: --verify rebuilds into a temporary directory (add --keep to keep it)"}
	}
	if *keep && !*verify {
		return usageError{"--keep goes with --verify (it keeps the root --verify rebuilds); --out DIR keeps a rebuild anyway"}
	}
	r, err := openRead(ctx, env)
	if err != nil {
		return err
	}
	defer r.Close()
	opts := replay.Options{Progress: replayProgress(env)}
	if *encode {
		// verify compares the vectors only of a root that has some.
		has := false
		if idx := r.Index(); idx != nil {
			st, err := idx.VectorState(ctx)
			has = err == nil && st.Max > 0
		}
		if !*verify || has {
			opts.Vectors, opts.VectorWorkers = loadEncoder(env), runtime.NumCPU()
		}
	}
	if *verify {
		if r.Unreadable != "" {
			return r.NoIndex()
		}
		for _, t := range r.Log.TornTails() {
			fmt.Fprintf(env.stderr, "dshmem: %s; replayed up to the last whole batch\n", t)
		}
		if q := r.Log.Quarantined(); len(q) > 0 {
			return fmt.Errorf("%w: until then its index holds what its log no longer reads, and the root cannot equal its replay", &events.QuarantinedError{Damage: q[0]})
		}
		rep, err := replay.Verify(ctx, r.Log, env.root, r.Index(), replay.VerifyOptions{Options: opts, Keep: *keep, Folded: r.Folded})
		endProgress(env)
		if err != nil {
			return err
		}
		diffs := len(rep.Differences)
		for _, d := range rep.Differences {
			fmt.Fprintf(env.stdout, "%s: %s\n", d.Path, d.Problem)
		}
		if len(rep.Behind) > 0 {
			if pid := observer.HolderPID(env.root); pid != 0 {
				for _, l := range rep.Behind {
					fmt.Fprintf(env.stderr, "dshmem: not compared: %s; process %d, which holds the root, had not folded the rest yet\n", l, pid)
				}
			} else {
				for _, l := range rep.Behind {
					fmt.Fprintf(env.stdout, "%s: behind the log: %s, and no process holds the root (the next writer to open it folds the rest)\n", replay.IndexFile, l)
				}
				diffs += len(rep.Behind)
			}
		}
		if rep.Moved != "" {
			fmt.Fprintf(env.stdout, "the root changed while verify ran (%s): a difference may be only that; run it again when the root is idle\n", rep.Moved)
		}
		if *keep {
			fmt.Fprintf(env.stdout, "the rebuilt root is kept at %s\n", rep.Dir)
		}
		if diffs > 0 {
			fmt.Fprintf(env.stdout, "%d of %d projection files (and the index) compared: %d differ from the log\n", rep.Files, rep.Files, diffs)
			return exitError{1}
		}
		fmt.Fprintf(env.stdout, "ok: %s and the index equal their replay of %s\n", plural(rep.Files, "projection file"), plural(int(rep.Stats.Events), "event"))
		if rep.Vectors != "" {
			fmt.Fprintf(env.stdout, "vectors: %s\n", rep.Vectors)
		}
		return nil
	}
	for _, t := range r.Log.TornTails() {
		fmt.Fprintf(env.stderr, "dshmem: %s; replayed up to the last whole batch\n", t)
	}
	dir := *out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "dshmem-replay-"); err != nil {
			return err
		}
	}
	st, err := replay.Rebuild(ctx, r.Log, dir, opts)
	endProgress(env)
	if err != nil {
		return err
	}
	rate := ""
	if st.Elapsed >= time.Second { // a rate over less is the start's cost, not a rate
		rate = fmt.Sprintf(" (%.0f events/s)", float64(st.Events)/st.Elapsed.Seconds())
	}
	fmt.Fprintf(env.stdout, "rebuilt %d events of %d streams into %s: index.db and %d projection files in %s%s\n",
		st.Events, st.Streams, dir, st.Files, st.Elapsed.Round(time.Millisecond), rate)
	if opts.Vectors != nil {
		fmt.Fprintf(env.stdout, "and %d vectors of English text (the sentence encoder)\n", st.Vectors)
	}
	return nil
}

// replayProgress reports a rebuild on a terminal only.
func replayProgress(env *cliEnv) func(stream string, seq uint64, done, total uint64) {
	if !isTerminal(env.stderr) {
		return nil
	}
	last := time.Time{}
	return func(stream string, seq uint64, done, total uint64) {
		if time.Since(last) < 200*time.Millisecond && done != total {
			return
		}
		last = time.Now()
		pct := 100.0
		if total > 0 {
			pct = 100 * float64(done) / float64(total)
		}
		fmt.Fprintf(env.stderr, "\rreplaying %d/%d events (%.0f%%), %s up to seq %d   ", done, total, pct, stream, seq)
	}
}

func endProgress(env *cliEnv) {
	if isTerminal(env.stderr) {
		fmt.Fprintln(env.stderr)
	}
}
