package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"dshmem/observer/distill"
	"dshmem/observer/distill/distilleval"
)

// defaultCorpus is where eval distill looks for the corpus: the
// repository's, when run from its root.
const defaultCorpus = "testdata/distill/corpus"

func runEvalDistill(ctx context.Context, env *cliEnv, c *command, args []string) error {
	fs := newFlags(c)
	data := fs.String("data", defaultCorpus, "directory of the labelled corpus (tune.jsonl, test.jsonl)")
	name := fs.String("distiller", "rules", "rules or openai")
	split := fs.String("split", "all", "tune, test or all")
	answers := fs.String("answers", "", "openai: recorded answers (default DIR/"+distilleval.AnswersFile+")")
	baseURL := fs.String("base-url", "", "openai: ask this endpoint instead of the recorded answers")
	model := fs.String("model", "", "openai: model name (default "+distill.DefaultModel+")")
	maxConf := fs.Int("confusions", 20, "confusions printed per split; -1 for all")
	asJSON := fs.Bool("json", false, "print results as JSON")
	pos, err := env.parseFlags(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{"eval distill takes no arguments"}
	}
	var splits []string
	switch *split {
	case "all":
		splits = []string{distilleval.SplitTune, distilleval.SplitTest}
	case distilleval.SplitTune, distilleval.SplitTest:
		splits = []string{*split}
	default:
		return usageError{fmt.Sprintf("--split %q: use tune, test or all", *split)}
	}
	if _, err := os.Stat(distilleval.File(*data, splits[0])); err != nil {
		return usageError{fmt.Sprintf("no corpus in %s (%v): run from the repository root or give --data testdata/distill/corpus", *data, err)}
	}
	d, closeFn, err := evalDistiller(*name, *data, *answers, *baseURL, *model)
	if err != nil {
		return err
	}
	defer closeFn()
	var reports []distilleval.Report
	for _, s := range splits {
		cases, err := distilleval.Load(*data, s)
		if err != nil {
			return err
		}
		outcomes, err := distilleval.Run(ctx, d, cases)
		if err != nil {
			return err
		}
		reports = append(reports, distilleval.Score(s, outcomes))
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(struct {
			Distiller string               `json:"distiller"`
			Model     string               `json:"model"`
			Splits    []distilleval.Report `json:"splits"`
		}{d.Name(), d.Model(), reports})
	}
	fmt.Fprintf(env.stdout, "distillation on %s: distiller %s (%s); P/R/F1 per op kind, tp/fp/fn\n", *data, d.Name(), d.Model())
	for _, r := range reports {
		fmt.Fprintln(env.stdout)
		distilleval.WriteText(env.stdout, r, *maxConf)
	}
	return nil
}

// evalDistiller builds the distiller eval distill runs: rules, or openai
// against the recorded answers (a replay server it starts) or a real
// endpoint. closeFn stops what it started.
func evalDistiller(name, data, answers, baseURL, model string) (d distill.Distiller, closeFn func(), err error) {
	closeFn = func() {}
	switch name {
	case "rules":
		return distill.NewRules(), closeFn, nil
	case "openai":
	default:
		return nil, nil, usageError{fmt.Sprintf("--distiller %q is not a distiller: use rules or openai", name)}
	}
	cfg := distill.OpenAIConfig{BaseURL: baseURL, Model: model, MaxAttempts: 3}
	if baseURL == "" {
		if answers == "" {
			answers = filepath.Join(data, distilleval.AnswersFile)
		}
		recorded, err := distilleval.LoadAnswers(answers)
		if err != nil {
			return nil, nil, err
		}
		srv, err := distilleval.NewReplayServer(recorded)
		if err != nil {
			return nil, nil, err
		}
		closeFn = func() { _ = srv.Close() }
		cfg.BaseURL, cfg.APIKey, cfg.MaxAttempts = srv.URL(), "replay", 1
	}
	d, err = distill.NewOpenAI(cfg)
	if errors.Is(err, distill.ErrNoAPIKey) {
		closeFn()
		return nil, nil, fmt.Errorf("eval distill --base-url %s: %w", baseURL, err)
	}
	if err != nil {
		closeFn()
		return nil, nil, fmt.Errorf("configure the openai distiller: %w", err)
	}
	return d, closeFn, nil
}
