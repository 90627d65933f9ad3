package main

import (
	"context"
	"fmt"
	"time"

	"dshmem/observer/bench"
)

// benchBackup is `dshmem bench backup`: the speed of a first backup, a
// backup with nothing changed and one after a small change.
func benchBackup(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["bench"]
	fs := newFlags(c)
	n := fs.Int("records", 1_000_000, "episodic records in the synthetic root (built once, cached)")
	restore := fs.Bool("restore", false, "also time restore-backup into a new root")
	asJSON := fs.Bool("json", false, "print results as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	if *n < 1 || *n > 100_000_000 {
		return usageError{fmt.Sprintf("--records %d is out of range (1..100000000)", *n)}
	}
	r, err := bench.BenchBackup(ctx, bench.BackupBenchOptions{Records: *n, Restore: *restore, Progress: benchProgress(env, "")})
	if err != nil {
		return fmt.Errorf("bench backup: %w", err)
	}
	if *asJSON {
		return printJSON(env, r)
	}
	built := "cached"
	if r.Built {
		built = fmt.Sprintf("built in %s", r.BuildTime.Round(time.Second))
	}
	fmt.Fprintf(env.stdout, "root of %d events (%s: %s): log %s, index %s\n", r.Events, built, r.Root, byteSize(r.LogBytes), byteSize(r.IndexBytes))
	fmt.Fprintf(env.stdout, "%-20s %10s %8s %12s\n", "backup", "took", "files", "copied")
	for _, b := range r.Runs {
		fmt.Fprintf(env.stdout, "%-20s %10s %8d %12s\n", b.Name, b.Took.Round(time.Millisecond), b.Copied, byteSize(b.CopiedBytes))
	}
	fmt.Fprintf(env.stdout, "backup verify        %10s\n", r.Verify.Round(time.Millisecond))
	if r.Restore > 0 {
		fmt.Fprintf(env.stdout, "restore-backup       %10s\n", r.Restore.Round(time.Millisecond))
	}
	return nil
}
