package main

import (
	"context"
	"fmt"
	"os"

	"dshmem/observer/demo"
)

func init() {
	register(&command{
		name:    "demo",
		summary: "run dshmem's main job on bundled sample data and narrate it",
		usage: `demo [--keep]

Creates a fresh temporary root and walks through what dshmem does with
the bundled sample conversation (English and Chinese, two workspaces):
ingest with validation and secret redaction, idempotent re-ingest,
search, verification of the log, recovery from a torn tail left by a
crash, rebuilding the index from the log alone, the Markdown files it
writes, and recovering a day file damaged the way the incident that
started dshmem did (cut to its first 16 lines). --root is not used.
With --keep the root is left on disk for you to explore.
`,
		run: runDemo,
	})
}

func runDemo(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["demo"]
	fs := newFlags(c)
	keep := fs.Bool("keep", false, "keep the temporary root afterwards")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "dshmem-demo-")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(root)
	}
	w := env.stdout
	if err := demo.Run(ctx, w, root); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if *keep {
		fmt.Fprintf(w, "The root is kept at %s. Try:\n  dshmem --root %s stats\n  dshmem --root %s search 注入\n  dshmem --root %s replay --verify\n  dshmem --root %s restore sessions/2026-08-18.md --at 2026-08-18T11:00:00+08:00\n  zstd -dc %s/log/*/*.jsonl.zst | head\n", root, root, root, root, root, root)
	} else {
		fmt.Fprintln(w, "Done; the temporary root was removed (run 'dshmem demo --keep' to explore it).")
	}
	return nil
}
