package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"dshmem/sqlstore/madial"
)

func init() {
	register(&command{
		name:    "eval",
		summary: "measure recall (MADial-Bench) or distillation (the labelled corpus)",
		usage: `eval madial --data DIR [--floors LIST] [--json]
       dshmem eval distill [--data DIR] [--distiller rules|openai] [--split tune|test|all] [--answers FILE] [--base-url URL] [--model M] [--confusions N] [--json]

Runs MADial-Bench (memory-augmented dialogue, zh and en): per dialogue,
that user's memories are folded as memory/remember events into a
temporary index, and the dialogue up to its test turn is the query of
the real recall path (the same recall.Find as 'dshmem recall', with
no score floor, 20 results). With the sentence encoder installed
('dshmem model install') it adds, per language, the dense ranking alone
(en), the eval's fusion of the two ("recall+dense", recall.FuseDense
over both top 20s) and the same fusion inside recall.Find with the
index's vectors filled as the server fills them ("recall+vectors": what
recall, search and packets do). Prints Recall@1/3/5/10/20 and nDCG@5/10 for
zh and en, beside the dense retrievers' published rankings in
DIR/baselines-zh (BGE-M3, Stella, Acge, Dmeta, OpenAI), scored with the
same metric code. DIR holds MADial-Bench-{zh,en}-{memory,dialogue}.json.
--floors LIST (with the encoder; about 20 s of CPU more) also runs the
English cases through recall.Find with its floors on, as recall, search
and packets do, at most 10 items: the words alone, then the vectors at
each DenseFloor of LIST (comma-separated numbers, "off" for none, e.g.
0.5,0.7,off), each case's dialogue and then its last user line (what a
packet asks with) as the query; it prints R@5/R@10 of the floored items,
the items shown and the labelled ones among them, and the items shown
from the user's memories less the labelled ones (nogold) and from the
other child's (other), where nothing shown is right.

eval distill runs a distiller on the labelled corpus (DIR, default
testdata/distill/corpus: tune.jsonl, test.jsonl, see its README) and
prints precision, recall and F1 per op kind (add, revise, supersede,
conflict, forget, nothing, all ops) for all cases, en and zh, on each
split asked for, then the confusions: per case, the expected ops that
were not matched and the ops got that matched nothing. An op matches
when its kind is the same and, for add, its type; for the others, its
target entry. Each case is fed as a checkpoint feeds the distiller and
the answer passes distill.Validate first. --distiller openai answers
from the recorded answers (--answers, default DIR/answers-openai.jsonl)
through a fake endpoint on loopback, so no model is needed; give
--base-url (and a key in $DEEPSEEK_API_KEY or $DSHMEM_LLM_API_KEY) to
ask a real endpoint instead. --root is not used.

Examples:
  dshmem eval madial --data ../shared/data/madial --floors 0.7,off
  dshmem eval distill                         # rules, both splits
  dshmem eval distill --split test --json     # the figures README quotes
  dshmem eval distill --distiller openai --confusions -1
`,
		run: runEval,
	})
}

func runEval(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["eval"]
	if len(args) == 0 {
		return usageError{"needs a benchmark name: madial or distill"}
	}
	if args[0] == "-h" || args[0] == "--help" {
		printCommandUsage(env.stdout, c)
		return nil
	}
	switch args[0] {
	case "madial":
	case "distill":
		return runEvalDistill(ctx, env, c, args[1:])
	default:
		return usageError{fmt.Sprintf("unknown benchmark %q: use madial or distill", args[0])}
	}
	fs := newFlags(c)
	data := fs.String("data", "", "directory of the MADial-Bench files")
	asJSON := fs.Bool("json", false, "print results as JSON")
	floorList := fs.String("floors", "", "also run with the floors on at these DenseFloor values (e.g. 0.5,0.7,off)")
	pos, err := env.parseFlags(c, fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{"eval madial takes no arguments"}
	}
	if *data == "" {
		return usageError{"needs --data DIR (the MADial-Bench files, e.g. ../shared/data/madial)"}
	}
	floors, err := parseDenseFloors(*floorList)
	if err != nil {
		return err
	}
	model, note := madial.InstalledEncoder()
	if floors != nil && model == nil {
		return fmt.Errorf("eval madial --floors needs the sentence encoder, not found (%s): install it with 'dshmem model install', or leave out --floors", note)
	}
	rows, err := madial.Bench(ctx, *data, madial.BenchOptions{Model: model})
	if err != nil {
		return err
	}
	var floored []madial.Result
	if floors != nil {
		if floored, err = madial.Floors(ctx, *data, "en", model, madial.FloorOptions{DenseFloors: floors}); err != nil {
			return fmt.Errorf("eval madial --floors: %w", err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(append(rows, floored...))
	}
	fmt.Fprintf(env.stdout, "MADial-Bench (%s): Recall@k and nDCG@k, macro-averaged over dialogues\n", *data)
	fmt.Fprintln(env.stdout, note)
	fmt.Fprintf(env.stdout, "%-4s %-22s %5s %6s %6s %6s %6s %6s %6s %6s\n", "lang", "retriever", "cases", "R@1", "R@3", "R@5", "R@10", "R@20", "nDCG@5", "nDCG@10")
	for _, r := range rows {
		fmt.Fprintf(env.stdout, "%-4s %-22s %5d %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f\n", r.Lang, r.Retriever, r.Cases,
			r.Recall["1"], r.Recall["3"], r.Recall["5"], r.Recall["10"], r.Recall["20"], r.NDCG["5"], r.NDCG["10"])
	}
	if len(floored) > 0 {
		fmt.Fprintf(env.stdout, "\nen with the floors on, at most %d items; per case: shown (of them labelled), shown without the labelled memories (nogold), from the other child's (other); any: share of cases shown one or more\n", madial.FloorLimit)
		fmt.Fprintf(env.stdout, "%-36s %6s %6s %6s %6s %6s %6s %6s %6s\n", "retriever", "R@5", "R@10", "shown", "gold", "nogold", "any", "other", "any")
		for _, r := range floored {
			f := r.Floors
			fmt.Fprintf(env.stdout, "%-36s %6.3f %6.3f %6.2f %6.3f %6.2f %6.3f %6.2f %6.3f\n", r.Retriever,
				r.Recall["5"], r.Recall["10"], f.Shown, f.Gold, f.NoGold, f.NoGoldAny, f.Other, f.OtherAny)
		}
	}
	return nil
}

// parseDenseFloors reads --floors: comma-separated DenseFloor values, a
// number from 0 to 1 or "off" (madial.DenseFloorOff); "" is nil.
func parseDenseFloors(s string) ([]float64, error) {
	if s == "" {
		return nil, nil
	}
	var out []float64
	for _, x := range strings.Split(s, ",") {
		x = strings.TrimSpace(x)
		if x == "off" {
			out = append(out, madial.DenseFloorOff)
			continue
		}
		f, err := strconv.ParseFloat(x, 64)
		if err != nil || !(f >= 0 && f <= 1) { // NaN too
			return nil, usageError{fmt.Sprintf("--floors %q: %q is not a DenseFloor: give numbers from 0 to 1 or off, comma-separated (e.g. 0.5,0.7,off)", s, x)}
		}
		out = append(out, f)
	}
	return out, nil
}
