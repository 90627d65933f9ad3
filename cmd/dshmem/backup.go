package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"dshmem/observer/backup"
	"dshmem/observer/httpapi"
)

func init() {
	register(&command{
		name:    "backup",
		summary: "copy the root to a backup directory (incremental); 'backup verify DIR' checks one",
		usage: `backup [--to DIR] [--json]
       dshmem backup verify [--json] DIR

Copies the root into DIR (default $DSH_MEMORY_BACKUP_ROOT, else
memory-backup/ beside the root): a consistent snapshot of index.db
(VACUUM INTO), then every log segment as far as it is committed, and a
manifest.json with each file's path, size and sha256, each stream's last
seq and the seqs the index snapshot reflects. The index is copied first
and the log after it, so the backup's log holds at least what its index
reflects, even while 'dshmem serve' ingests.

A directory keeps one backup, the newest, and each run only copies what
changed: a segment the manifest holds with the same sha256 is not copied
again, and when nothing but earlier backups' records came since the last
run, nothing is copied at all. Each run appends a maintenance/backup
event to the global stream saying what it copied; the session-start
context's "backup due" reminder counts 7 days from it, and 'dshmem
serve' runs a backup itself when one is due.

A directory that holds other files and no manifest is refused, and so
is one inside the root, and one that holds another root's backup (two
roots beside each other share the default directory; a root made anew
at an old root's path is another root): bringing it up to this root
would remove the other root's files. A backup is this root's when
each stream it holds is this root's as it was: the same first event and
the same event at the last seq the backup's index snapshot reflects
(id and time) and at least the backup's last seq, or a stream
purged here since. A moved root, or one restored from the backup, backs
up into it as before; a root that no longer holds events the backup
does (a salvage cut them) is refused too. With a server
holding the root the backup is run by it (the record is a write).

'backup verify DIR' checks a backup: every file of the manifest is there
with its size and sha256, the copied log verifies (frames, seqs, hash
chain) up to each stream's seq, and the index snapshot reflects no more
than the log holds. It changes nothing; it exits 1 on any problem.

Examples:
  dshmem backup                         # into memory-backup/ beside the root
  dshmem backup --to /mnt/usb/dshmem    # elsewhere
  dshmem backup verify /mnt/usb/dshmem
  dshmem restore-backup /mnt/usb/dshmem --root ~/.dsh/memory-restored
`,
		run: runBackup,
	})
}

func runBackup(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) > 0 && args[0] == "verify" {
		return runBackupVerify(ctx, env, args[1:])
	}
	c := commands["backup"]
	fs := newFlags(c)
	to := fs.String("to", "", "the backup directory (default $"+backup.EnvDir+", else memory-backup/ beside the root)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	dir := *to
	if dir == "" {
		dir = backup.DefaultDir(env.root)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return usageError{fmt.Sprintf("--to %s: %v", dir, err)}
	}
	eng, err := openExisting(ctx, env)
	var rep backup.Report
	if err != nil {
		if err := onServer(ctx, env, err, sayRunBy, "/v1/backup", httpapi.BackupAPIRequest{To: abs}, &rep, nil); err != nil {
			return err
		}
	} else {
		defer eng.Close()
		if rep, err = backup.Run(ctx, eng, backup.Options{To: abs}); err != nil {
			return err
		}
		if err := eng.Close(); err != nil {
			return fmt.Errorf("close root: %w", err)
		}
	}
	if *asJSON {
		return printJSON(env, rep)
	}
	printBackup(env, rep)
	return nil
}

func printBackup(env *cliEnv, rep backup.Report) {
	w := env.stdout
	fmt.Fprintf(w, "backup of %s into %s: generation %d (%s)\n", env.root, rep.To, rep.Generation, rep.Took.Round(1e6))
	if rep.Unchanged {
		fmt.Fprintln(w, "  nothing changed since the last backup: nothing copied")
	} else {
		fmt.Fprintf(w, "  copied %s (%s)%s\n", plural(len(rep.Copied), "file"), byteSize(rep.CopiedBytes), listTail(rep.Copied, 6))
	}
	if len(rep.Removed) > 0 {
		fmt.Fprintf(w, "  removed %s the root no longer has%s\n", plural(len(rep.Removed), "file"), listTail(rep.Removed, 6))
	}
	var streams []string
	for s, seq := range rep.Streams {
		streams = append(streams, fmt.Sprintf("%s %d", s, seq))
	}
	sort.Strings(streams)
	fmt.Fprintf(w, "  holds %s (%s); streams up to: %s\n", plural(rep.Files, "file"), byteSize(rep.Bytes), strings.Join(streams, ", "))
	fmt.Fprintf(w, "  recorded as maintenance/backup, seq %d of the global stream\n", rep.EventSeq)
}

// listTail is ": a, b, c" (at most n, then "…"), or "" for none.
func listTail(items []string, n int) string {
	if len(items) == 0 {
		return ""
	}
	if len(items) > n {
		return ": " + strings.Join(items[:n], ", ") + ", …"
	}
	return ": " + strings.Join(items, ", ")
}

// byteSize is n in B, KiB, MiB or GiB.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func runBackupVerify(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["backup"]
	fs := newFlags(c)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := env.parseFlags(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"backup verify needs exactly one DIR, the backup directory"}
	}
	rep, err := backup.Verify(ctx, pos[0])
	if errors.Is(err, backup.ErrNoManifest) {
		return err
	}
	if err != nil {
		return fmt.Errorf("verify backup %s: %w", pos[0], err)
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintf(env.stdout, "problem: %s\n", p)
		}
		for _, n := range rep.Notes {
			fmt.Fprintf(env.stdout, "note: %s\n", n)
		}
		if rep.OK() {
			fmt.Fprintf(env.stdout, "ok: backup %s, generation %d of %s: %d files (%s), %d streams, %d events verified\n",
				rep.Dir, rep.Generation, rep.Created, rep.Files, byteSize(rep.Bytes), rep.Streams, rep.Events)
		} else {
			fmt.Fprintf(env.stdout, "%d problems in backup %s: restore-backup may fail or restore less; run 'dshmem backup' to make a new one\n", len(rep.Problems), rep.Dir)
		}
	}
	if !rep.OK() {
		return exitError{1}
	}
	return nil
}
