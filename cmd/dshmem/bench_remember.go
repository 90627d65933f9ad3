package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"dshmem/observer/bench"
)

const benchRememberUsage = `bench remember [--entries N] [--callers C] [--json]

Starts 'dshmem serve --no-watch' as a child process over a fresh
temporary root (removed afterwards), waits for its serve.json, and sends
N POST /v1/remember calls over loopback HTTP, one memory a call, from C
concurrent callers, all into one workspace — as a host remembers, one
fact at a time, so the workspace grows to N entries during the run.
Prints writes/s and p50/p99 latency of the first and the last tenth of
the calls, so growth with the size of the memory shows, and checks that
the server holds all N entries. --root is not used.
`

// benchRemember drives one remember per call against a real server
// process (bench.BenchRemember) and prints what it measured. A hidden
// --server BIN runs another build's server with the same client, so two
// builds compare side by side.
func benchRemember(ctx context.Context, env *cliEnv, args []string) error {
	c := &command{name: "bench", usage: benchRememberUsage}
	args, bin := cutHiddenFlag(args, "server")
	fs := newFlags(c)
	entries := fs.Int("entries", 3000, "remembers to send (the workspace ends with this many entries)")
	callers := fs.Int("callers", 1, "concurrent callers")
	asJSON := fs.Bool("json", false, "print results as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	if *entries < 20 || *entries > 10_000_000 || *callers < 1 || *callers > 1024 {
		return usageError{"--entries must be 20..10000000 and --callers 1..1024"}
	}
	root, err := os.MkdirTemp("", "dshmem-bench-remember-")
	if err != nil {
		return fmt.Errorf("make temporary root: %w", err)
	}
	defer os.RemoveAll(root)
	res, err := bench.BenchRemember(ctx, root, bench.RememberBenchOptions{Server: bin, Entries: *entries, Callers: *callers})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(env.stdout, "%d remembers into one workspace, %d caller(s), one per call over loopback HTTP; %.1f s\n",
		res.Entries, res.Callers, res.Seconds)
	fmt.Fprintf(env.stdout, "%-10s %8s %12s %10s %10s\n", "calls", "n", "writes/s", "p50", "p99")
	for _, w := range res.Windows {
		fmt.Fprintf(env.stdout, "%-10s %8d %12.0f %10s %10s\n", w.Name, w.Calls, w.PerSecond,
			w.P50.Round(10*time.Microsecond), w.P99.Round(10*time.Microsecond))
	}
	fmt.Fprintf(env.stdout, "server CPU (user+system, whole run) per remember: %s\n", res.ServerCPUPerRemember.Round(time.Microsecond))
	fmt.Fprintf(env.stdout, "entries held by the server: %d of %d\n", res.Held, res.Entries)
	if res.Held != res.Entries {
		return exitError{1}
	}
	return nil
}
