package main

import (
	"context"
	"fmt"

	"dshmem/observer/backup"
)

func init() {
	register(&command{
		name:    "restore-backup",
		summary: "rebuild a root from a backup directory (into a new or empty root)",
		usage: `restore-backup DIR [--root R] [--json]

Rebuilds a root from the backup in DIR ('dshmem backup' makes one): it
copies the log, checking every byte against the manifest's sha256, puts
the index snapshot in place and opens the root, which folds what the log
holds past the snapshot and writes every Markdown projection. When the
snapshot is unusable the index is rebuilt from the log instead (slower,
the same result). Afterwards 'dshmem replay --verify' passes and recall
answers as it did when the backup was taken.

The root is --root R (or the global --root before the command, else the
usual default). It must not exist or be an empty directory: a root with
anything in it is refused and left as it is. A failed restore removes
what it wrote.

Examples:
  dshmem restore-backup ~/.dsh/memory-backup --root ~/.dsh/memory
  dshmem backup verify /mnt/usb/dshmem && dshmem restore-backup /mnt/usb/dshmem --root /tmp/memory
`,
		run: runRestoreBackup,
	})
}

func runRestoreBackup(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["restore-backup"]
	fs := newFlags(c)
	root := fs.String("root", env.root, "the root to rebuild (new or empty)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := env.parseFlags(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"needs exactly one DIR, the backup directory"}
	}
	rep, err := backup.Restore(ctx, pos[0], *root)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env, rep)
	}
	fmt.Fprintf(env.stdout, "restored %s from %s (generation %d): %d segments (%s), %d events\n",
		rep.Root, rep.From, rep.Generation, rep.Files, byteSize(rep.Bytes), rep.Events)
	if rep.Index == "snapshot" {
		fmt.Fprintf(env.stdout, "  index: from the snapshot, %d events folded past it\n", rep.CaughtUp)
	} else {
		fmt.Fprintf(env.stdout, "  index: rebuilt from the log (%s)\n", rep.Note)
	}
	fmt.Fprintf(env.stdout, "  check it with: dshmem --root %s replay --verify\n", rep.Root)
	return nil
}
