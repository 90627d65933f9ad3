package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"dshmem/observer/bench"
	"dshmem/sqlstore/vectors"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "measure ingest, recall and serve speed on this machine",
		usage: `bench ingest [--events N] [--size B] [--json]
       dshmem bench recall [--records N] [--queries Q] [--vectors] [--json]
       dshmem bench serve [--sessions N] [--seconds S] (see 'dshmem bench serve --help')
       dshmem bench remember [--entries N] [--callers C] (see 'dshmem bench remember --help')
       dshmem bench backup [--records N] [--restore] [--json]

ingest  Writes N synthetic events of about B bytes (mixed English, Chinese
        and code identifiers, fixed seed) twice, each time into a fresh
        temporary root that is removed afterwards:
          log        the log alone: 16 concurrent producers appending 64
                     events per call, fsync'd group commit;
          log+index  the whole intake (validate, redact, dedupe, append,
                     fold into SQLite + FTS5) in calls of 1,000 lines.
        Prints events/s, p50/p99 acknowledgement latency per call and
        bytes on disk per event. --root is not used.

recall  Builds once, and caches under the user cache directory (keyed by
        N and a format version), a root of N synthetic episodic records
        (the same chatter, fixed seed) plus one memory entry per 50
        records, through the ordinary intake. Then times Q queries of
        1–6 terms, half very common and half rare words, three ways:
        recall (entries of one workspace and global), search (episodic,
        every stream) and search --kind all. Prints p50/p95/p99 latency,
        documents scored per query and index bytes per record.
        --vectors (needs 'dshmem model install') times the three again
        with the sentence encoder: each query encoded by the model and
        fused with the nearest vectors of its scopes. The root (its own,
        "-vectors") gets stand-in vectors, a unit vector drawn from each
        English text's hash: a scan costs the same whatever the vectors
        hold, and encoding a million texts takes hours here.

backup  Builds once (cached, the same chatter and entries as recall) a
        root of N records (default 1,000,000), then backs it up into a
        fresh temporary directory three times: the first backup, one with
        nothing changed, and one after 1,000 more events; then verifies
        the backup (and with --restore restores it into a new root).
        Prints each time and what was copied. Each backup records itself
        in the cached root, as a real one does.
`,
		run: runBench,
	})
}

func runBench(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["bench"]
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			return usageError{"needs a benchmark name: ingest, recall, serve, remember or backup"}
		}
		printCommandUsage(env.stdout, c)
		return nil
	}
	switch args[0] {
	case "ingest":
		return benchIngest(ctx, env, args[1:])
	case "recall":
		return benchRecall(ctx, env, args[1:])
	case "serve":
		return benchServe(ctx, env, args[1:]) // bench_serve.go
	case "remember":
		return benchRemember(ctx, env, args[1:]) // bench_remember.go
	case "backup":
		return benchBackup(ctx, env, args[1:]) // bench_backup.go
	default:
		return usageError{fmt.Sprintf("unknown benchmark %q: use ingest, recall, serve, remember or backup", args[0])}
	}
}

func benchIngest(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["bench"]
	// Hidden: --write-file PATH writes the N synthetic events as a JSONL
	// file and exits, for timing `dshmem ingest PATH` end to end.
	args, file := cutHiddenFlag(args, "write-file")
	fs := newFlags(c)
	n := fs.Int("events", 100_000, "events to write")
	size := fs.Int("size", 300, "bytes per event line")
	asJSON := fs.Bool("json", false, "print results as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	if *n < 1 || *n > 100_000_000 {
		return usageError{fmt.Sprintf("--events %d is out of range (1..100000000)", *n)}
	}
	if *size < 120 || *size > 200_000 {
		return usageError{fmt.Sprintf("--size %d is out of range (120..200000)", *size)}
	}
	if file != "" {
		return writeBenchFile(file, *n, *size)
	}
	progress := benchProgress(env, "events")
	opts := bench.BenchOptions{Events: *n, Size: *size, Progress: progress}
	var results []bench.BenchResult
	for _, phase := range []string{"log", "log+index"} {
		dir, err := os.MkdirTemp("", "dshmem-bench-")
		if err != nil {
			return err
		}
		var r bench.BenchResult
		if phase == "log" {
			r, err = bench.BenchLog(ctx, dir, opts)
		} else {
			r, err = bench.BenchIngest(ctx, dir, opts)
		}
		os.RemoveAll(dir)
		if err != nil {
			return fmt.Errorf("bench %s: %w", phase, err)
		}
		results = append(results, r)
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	fmt.Fprintf(env.stdout, "%d events of ~%d bytes\n", *n, *size)
	fmt.Fprintf(env.stdout, "%-10s %12s %12s %12s %14s %12s\n", "phase", "events/s", "p50 ack", "p99 ack", "log B/event", "index B/event")
	for _, r := range results {
		idx := "-"
		if r.IndexBytes > 0 {
			idx = fmt.Sprintf("%.0f", float64(r.IndexBytes)/float64(r.Events))
		}
		fmt.Fprintf(env.stdout, "%-10s %12.0f %12s %12s %14.1f %12s\n", r.Phase, r.EventsPerSec, r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.BytesPerEvent, idx)
	}
	return nil
}

func benchRecall(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["bench"]
	args, profile := cutHiddenFlag(args, "cpuprofile")
	fs := newFlags(c)
	n := fs.Int("records", 100_000, "episodic records in the synthetic root")
	nq := fs.Int("queries", 1000, "queries timed per mode")
	asJSON := fs.Bool("json", false, "print results as JSON")
	withVectors := fs.Bool("vectors", false, "time each mode again with the sentence encoder (stand-in vectors in the root; queries encoded by the model)")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	var dense *vectors.Dense
	if *withVectors {
		m := loadEncoder(env)
		if m == nil {
			return usageError{"--vectors needs the sentence encoder: run 'dshmem model install' (or set DSHMEM_MODELS)"}
		}
		dense = vectors.NewDense(m)
	}
	if *n < 1 || *n > 100_000_000 {
		return usageError{fmt.Sprintf("--records %d is out of range (1..100000000)", *n)}
	}
	if *nq < 1 || *nq > 1_000_000 {
		return usageError{fmt.Sprintf("--queries %d is out of range (1..1000000)", *nq)}
	}
	stop, err := startCPUProfile(profile)
	if err != nil {
		return err
	}
	defer stop()
	progress := benchProgress(env, "")
	r, err := bench.BenchRecall(ctx, bench.RecallBenchOptions{Records: *n, Queries: *nq, Progress: progress, Dense: dense})
	if err != nil {
		return fmt.Errorf("bench recall: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	built := "cached"
	if r.Built {
		built = fmt.Sprintf("built in %s", r.BuildTime.Round(time.Second))
	}
	fmt.Fprintf(env.stdout, "%d records, %d entries (%s: %s)\n", r.Records, r.Entries, built, r.Root)
	fmt.Fprintf(env.stdout, "index %.1f MB, %.0f bytes per record\n", float64(r.IndexBytes)/1e6, r.BytesPerRecord)
	if dense != nil {
		fmt.Fprintf(env.stdout, "%d stand-in vectors of English texts; +vectors modes encode each query with the model\n", r.Vectors)
	}
	fmt.Fprintf(env.stdout, "%-18s %8s %10s %10s %10s %10s %12s %8s %8s\n", "mode", "queries", "p50", "p95", "p99", "max", "scored/q", "partial", "empty")
	for _, m := range r.Runs {
		fmt.Fprintf(env.stdout, "%-18s %8d %10s %10s %10s %10s %7.0f/%-4d %8d %8d\n", m.Mode, m.Queries,
			m.P50.Round(time.Microsecond), m.P95.Round(time.Microsecond), m.P99.Round(time.Microsecond), m.Max.Round(time.Microsecond),
			m.Candidates, m.CandMax, m.Partial, m.Empty)
	}
	return nil
}

// benchProgress reports a benchmark's progress on a terminal, at most
// five times a second; elsewhere it does nothing.
func benchProgress(env *cliEnv, unit string) func(phase string, done, total int) {
	if !isTerminal(env.stderr) {
		return func(string, int, int) {}
	}
	if unit != "" {
		unit = " " + unit
	}
	last := time.Now()
	return func(phase string, done, total int) {
		if time.Since(last) > 200*time.Millisecond || done == total {
			last = time.Now()
			fmt.Fprintf(env.stderr, "\r%-10s %d/%d%s", phase, done, total, unit)
			if done == total {
				fmt.Fprintln(env.stderr)
			}
		}
	}
}

// writeBenchFile writes n synthetic event lines of about size bytes, the
// ones bench ingest sends, to path.
func writeBenchFile(path string, n, size int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	syn := bench.NewSynth(1)
	for i := 0; i < n; i++ {
		w.Write(syn.Line(i, size, 4))
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// startCPUProfile writes a CPU profile to path until stop is called;
// path "" profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start CPU profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// cutHiddenFlag takes --name FILE or --name=FILE out of args: a flag
// for whoever tunes dshmem, kept out of --help.
func cutHiddenFlag(args []string, name string) ([]string, string) {
	var out []string
	val := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		flagName, v, hasV := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || flagName != name {
			out = append(out, a)
			continue
		}
		if !hasV && i+1 < len(args) {
			i++
			v = args[i]
		}
		val = v
	}
	return out, val
}
