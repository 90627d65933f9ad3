package main

import (
	"context"
	"dshmem/observer/handedit"
	"encoding/json"
	"fmt"
)

func init() {
	register(&command{
		name:    "sync",
		summary: "read hand edits of the Markdown files back into the log",
		usage: `sync [--json]

Finds the projection files whose bytes differ from what dshmem wrote and:
  global.md, knowledge/*.md    logs the edit (file/edit) and what it did to
                               the entries (memory/ops with provenance
                               hand-edit: revise an edited block, add a new
                               one, forget a removed one); renders the file again
  index.md, memory_summary.md  views, not sources: logs the text (file/edit)
                               and renders the file again
  sessions/YYYY-MM-DD.md       records: reported and left; 'dshmem restore'
                               puts the log's version back
A change that removes more than half of a file's blocks is damage, not an
edit: the bytes are kept as <name>.damaged and the file is rendered again.
A deleted file is rendered again.
`,
		run: runSync,
	})
}

func runSync(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["sync"]
	fs := newFlags(c)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	eng, err := openExisting(ctx, env)
	if err != nil {
		return err
	}
	defer eng.Close()
	rep, err := handedit.Sync(ctx, eng)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if len(rep.Files) == 0 {
		fmt.Fprintln(env.stdout, "no hand edits: every file is as dshmem wrote it")
		return nil
	}
	for _, f := range rep.Files {
		fmt.Fprintf(env.stdout, "%-10s %s", f.Action, f.Path)
		if f.Ops > 0 {
			fmt.Fprintf(env.stdout, " (%d ops)", f.Ops)
		}
		if f.Detail != "" {
			fmt.Fprintf(env.stdout, ": %s", f.Detail)
		}
		fmt.Fprintln(env.stdout)
	}
	return nil
}
