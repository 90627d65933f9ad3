package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"dshmem/events/payload"
	"dshmem/observer/checkpoint"
	"dshmem/observer/distill"
)

// Environment variables of the distiller configuration.
const (
	envDistiller  = "DSHMEM_DISTILLER"
	envLLMBaseURL = "DSHMEM_LLM_BASE_URL"
	envLLMModel   = "DSHMEM_LLM_MODEL"
)

func init() {
	register(&command{
		name:    "checkpoint",
		summary: "distil pending conversation into memory entries",
		usage: `checkpoint [--cwd DIR] [--session ID] [--force] [--distiller rules|openai] [--base-url URL] [--model M] [--json]

Finds the sessions with pending work — events after the range the last
checkpoint of the session claimed, read from the log, so nothing is lost
across restarts — and checkpoints those a trigger has fired for: 10 user
turns, 4,000 characters, 5 minutes idle (now against the newest event of
the session), a task end, a compaction or a session end. --force
checkpoints every session with pending user text: an explicit request.
--cwd (the scope of DIR: a subdirectory reaches its project's scope) and
--session narrow the sessions looked at.

Each claimed range is given to the distiller with the related existing
entries; its answer is validated and committed as one memory/ops event,
which the index folds into entries (replay never calls a distiller).
A distiller that fails writes nothing: the range stays pending.

The distiller is rules (offline, deterministic; the default) or openai
(any OpenAI-compatible endpoint, DeepSeek by default; the key from
$DEEPSEEK_API_KEY or $DSHMEM_LLM_API_KEY). The defaults come from
$DSHMEM_DISTILLER, $DSHMEM_LLM_BASE_URL and $DSHMEM_LLM_MODEL.

Prints each checkpoint with the ops it committed and the ones it
rejected and why, or "nothing pending". Exits 1 when a distiller failed.
--json prints an array of {stream, session, reason, from, to, messages,
related, distiller, model, checkpoint, seq, ops, entries, rejected,
duplicate, error}.
`,
		run: runCheckpoint,
	})
}

func runCheckpoint(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["checkpoint"]
	fs := newFlags(c)
	cwd := fs.String("cwd", "", "only the workspace of this directory")
	session := fs.String("session", "", "only this session")
	force := fs.Bool("force", false, "checkpoint every session with pending user text, triggered or not")
	name := fs.String("distiller", envOr(envDistiller, "rules"), "rules or openai")
	baseURL := fs.String("base-url", os.Getenv(envLLMBaseURL), "openai: endpoint base URL (default "+distill.DefaultBaseURL+")")
	model := fs.String("model", os.Getenv(envLLMModel), "openai: model (default "+distill.DefaultModel+")")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	d, err := newDistiller(*name, *baseURL, *model)
	if err != nil {
		return err
	}
	if *cwd != "" {
		if *cwd, err = workDir(*cwd); err != nil {
			return err
		}
	}
	eng, err := openExisting(ctx, env)
	if err != nil {
		return forwardCheckpoint(ctx, env, err, *cwd, *session, *force, *asJSON) // a server holds the root (forward.go)
	}
	defer eng.Close()
	results, err := checkpoint.Run(ctx, eng, checkpoint.Request{
		Cwd: *cwd, Session: *session, Force: *force, Now: time.Now(), Distiller: d,
	})
	failed := false
	for _, r := range results {
		failed = failed || r.Err != nil
	}
	if *asJSON {
		printCheckpointJSON(env, results)
	} else {
		printCheckpoint(env, results)
	}
	if err != nil {
		return err
	}
	if err := eng.Close(); err != nil {
		return fmt.Errorf("close root: %w", err)
	}
	if failed {
		return exitError{1}
	}
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// newDistiller builds the distiller the flags name.
func newDistiller(name, baseURL, model string) (distill.Distiller, error) {
	switch name {
	case "rules":
		return distill.NewRules(), nil
	case "openai":
		d, err := distill.NewOpenAI(distill.OpenAIConfig{BaseURL: baseURL, Model: model})
		if err != nil {
			return nil, fmt.Errorf("configure the openai distiller: %w", err)
		}
		return d, nil
	}
	return nil, usageError{fmt.Sprintf("--distiller %q is not a distiller: use rules or openai (or set %s)", name, envDistiller)}
}

func printCheckpoint(env *cliEnv, results []checkpoint.Result) {
	if len(results) == 0 {
		fmt.Fprintln(env.stdout, "nothing pending")
		return
	}
	for _, r := range results {
		head := fmt.Sprintf("%s (%s) seqs %d..%d, %s, %s", r.Session, r.Stream, r.From, r.To, r.Reason, plural(r.Messages, "message"))
		switch {
		case r.Err != nil:
			fmt.Fprintf(env.stdout, "%s: distiller failed, nothing written, the range stays pending: %v\n", head, r.Err)
			continue
		case r.Duplicate:
			fmt.Fprintf(env.stdout, "%s: already checkpointed by another run\n", head)
			continue
		}
		fmt.Fprintf(env.stdout, "%s: %s committed as %s at seq %d (%s %s), %d rejected\n",
			head, plural(len(r.Ops), "op"), r.Checkpoint, r.Seq, r.Distiller, r.Model, len(r.Rejected))
		for i, o := range r.Ops {
			title := o.Title
			switch o.Op { // the evidence ops have no title: say what they do
			case payload.OpAlias:
				title = o.Alias + " → " + o.Expansion
			case payload.OpConfidence, payload.OpProcedure:
				title = o.Reason
				if o.Delta != nil {
					title = fmt.Sprintf("%+.2f %s", *o.Delta, o.Reason)
				}
			}
			line := fmt.Sprintf("  %-9s %s  %s", o.Op, r.Entries[i], oneLine(title, 100))
			if o.TargetID != "" && o.TargetID != r.Entries[i] {
				line += "  (target " + o.TargetID + ")"
			}
			fmt.Fprintln(env.stdout, line)
		}
		if len(r.GlobalOps) > 0 {
			fmt.Fprintf(env.stdout, "  and %s for global entries, committed in global at seq %d\n", plural(len(r.GlobalOps), "op"), r.GlobalSeq)
			for _, o := range r.GlobalOps {
				fmt.Fprintf(env.stdout, "  %-9s %s  %s\n", o.Op, o.TargetID, oneLine(fmt.Sprintf("%+.2f %s", *o.Delta, o.Reason), 100))
			}
		}
		for _, rj := range r.Rejected {
			fmt.Fprintf(env.stdout, "  rejected  %s %s: %s\n", rj.Op.Op, oneLine(firstNonEmpty(rj.Op.Title, rj.Op.Content), 80), rj.Why)
		}
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ey") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func printCheckpointJSON(env *cliEnv, results []checkpoint.Result) {
	type out struct {
		checkpoint.Result
		Error string `json:"error,omitempty"`
	}
	list := make([]out, 0, len(results))
	for _, r := range results {
		o := out{Result: r}
		if r.Err != nil {
			o.Error = r.Err.Error()
		}
		if o.Ops == nil {
			o.Ops = []distill.Op{}
		}
		if o.Entries == nil {
			o.Entries = []string{}
		}
		list = append(list, o)
	}
	enc := json.NewEncoder(env.stdout)
	enc.SetIndent("", "  ")
	enc.Encode(list)
}
