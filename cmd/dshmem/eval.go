package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"
	"dshmem/sqlstore/encoder"
	"dshmem/sqlstore/madial"
	"dshmem/sqlstore/recall"
)

func init() {
	register(&command{
		name:    "eval",
		summary: "measure recall quality on a benchmark (MADial-Bench)",
		usage: `eval madial --data DIR [--json]

Runs MADial-Bench (memory-augmented dialogue, zh and en): per dialogue,
that user's memories are folded as memory/remember events into a
temporary index, and the dialogue up to its test turn is the query of
the real recall path (the same recall.Find as 'dshmem recall', with
no score floor, 20 results). Prints Recall@1/3/5/10/20 and nDCG@5/10 for
zh and en, beside the dense retrievers' published rankings in
DIR/baselines-zh (BGE-M3, Stella, Acge, Dmeta, OpenAI), scored with the
same metric code. DIR holds MADial-Bench-{zh,en}-{memory,dialogue}.json.
--root is not used.
`,
		run: runEval,
	})
}

func runEval(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["eval"]
	if len(args) == 0 {
		return usageError{"needs a benchmark name: madial"}
	}
	if args[0] == "-h" || args[0] == "--help" {
		printCommandUsage(env.stdout, c)
		return nil
	}
	if args[0] != "madial" {
		return usageError{fmt.Sprintf("unknown benchmark %q: use madial", args[0])}
	}
	fs := newFlags(c)
	data := fs.String("data", "", "directory of the MADial-Bench files")
	asJSON := fs.Bool("json", false, "print results as JSON")
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
	model, note := evalModel()
	rows, err := evalMADial(ctx, *data, model)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	fmt.Fprintf(env.stdout, "MADial-Bench (%s): Recall@k and nDCG@k, macro-averaged over dialogues\n", *data)
	fmt.Fprintln(env.stdout, note)
	fmt.Fprintf(env.stdout, "%-4s %-20s %5s %6s %6s %6s %6s %6s %6s %6s\n", "lang", "retriever", "cases", "R@1", "R@3", "R@5", "R@10", "R@20", "nDCG@5", "nDCG@10")
	for _, r := range rows {
		fmt.Fprintf(env.stdout, "%-4s %-20s %5d %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f\n", r.Lang, r.Retriever, r.Cases,
			r.Recall["1"], r.Recall["3"], r.Recall["5"], r.Recall["10"], r.Recall["20"], r.NDCG["5"], r.NDCG["10"])
	}
	return nil
}

// evalModel loads the installed encoder, or says why there is none.
func evalModel() (*encoder.Model, string) {
	dir, err := encoder.DefaultDir()
	if err == nil {
		err = encoder.Verify(dir)
	}
	var m *encoder.Model
	if err == nil {
		m, err = encoder.Load(dir)
	}
	if err != nil {
		return nil, fmt.Sprintf("dense: none (%v)", err)
	}
	return m, fmt.Sprintf("dense: %s (%s), English queries and memories only; fused with recall.FuseDense, DenseBlend %.2f",
		encoder.ModelID, encoder.ModelVersion, recall.DefaultWeights.DenseBlend)
}

// evalRow is one retriever's figures on one language.
type evalRow struct {
	Lang      string             `json:"lang"`
	Retriever string             `json:"retriever"`
	Cases     int                `json:"cases"`
	Recall    map[string]float64 `json:"recall"`
	NDCG      map[string]float64 `json:"ndcg"`
}

func newEvalRow(lang, name string, m madial.Metrics) evalRow {
	r := evalRow{Lang: lang, Retriever: name, Cases: m.N, Recall: map[string]float64{}, NDCG: map[string]float64{}}
	for k, v := range m.Recall {
		r.Recall[strconv.Itoa(k)] = v
	}
	for k, v := range m.NDCG {
		r.NDCG[strconv.Itoa(k)] = v
	}
	return r
}

// evalMADial scores dshmem recall on zh and en, then the zh baselines.
// With the encoder installed (dshmem model install) it adds, per language,
// the dense ranking alone (English only) and the fused one; m nil leaves
// them out.
func evalMADial(ctx context.Context, dir string, m *encoder.Model) ([]evalRow, error) {
	return evalMADialWith(ctx, dir, nil, m)
}

func evalMADialWith(ctx context.Context, dir string, w *recall.Weights, model *encoder.Model) ([]evalRow, error) {
	if w == nil {
		w = &recall.DefaultWeights
	}
	tmp, err := os.MkdirTemp("", "dshmem-eval-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var rows []evalRow
	var zhCases []madial.Case
	for _, lang := range []string{"zh", "en"} {
		memories, cases, err := madial.Load(dir, lang)
		if err != nil {
			return nil, fmt.Errorf("eval madial: %w", err)
		}
		if lang == "zh" {
			zhCases = cases
		}
		r := &recallRetriever{ctx: ctx, dir: filepath.Join(tmp, lang), weights: w}
		ranked := madial.Run(r, memories, cases, 20)
		rows = append(rows, newEvalRow(lang, "dshmem recall", madial.Evaluate(ranked, cases)))
		if model != nil {
			d := madial.EncoderDense(model)
			if lang == "en" {
				rows = append(rows, newEvalRow(lang, "dense "+encoder.ModelID, madial.Evaluate(madial.Run(d, memories, cases, 20), cases)))
			}
			f := madial.Fused{Lexical: r, Dense: d, Weights: w}
			rows = append(rows, newEvalRow(lang, "dshmem recall+dense", madial.Evaluate(madial.Run(f, memories, cases, 20), cases)))
		}
		r.close()
		if r.err != nil {
			return nil, fmt.Errorf("eval madial %s: %w", lang, r.err)
		}
		rows = append(rows, newEvalRow(lang, "lexical floor", madial.Evaluate(madial.Run(madial.Lexical{}, memories, cases, 20), cases)))
	}
	base, err := madial.LoadBaselines(filepath.Join(dir, "baselines-zh"))
	if err != nil {
		return nil, fmt.Errorf("eval madial: %w", err)
	}
	names := make([]string, 0, len(base))
	for n := range base {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rows = append(rows, newEvalRow("zh", n, madial.Evaluate(base[n], zhCases)))
	}
	return rows, nil
}

// recallRetriever answers madial.Run through recall.Find: the first
// time it sees a user, it folds that user's memories into a fresh index
// as memory/remember events (content = the event sentence, tags = scene
// and emotion, time = the memory's date), exactly as ingest would.
type recallRetriever struct {
	ctx     context.Context
	dir     string
	weights *recall.Weights // nil: recall.DefaultWeights
	stores  map[int]*userIndex
	err     error
}

type userIndex struct {
	s     *sqlstore.Store
	ids   map[string]int // entry id → memory id
	now   time.Time
	byMem map[int]bool
}

const evalStream = "global"

func (r *recallRetriever) index(user int, mems []madial.Memory) (*userIndex, error) {
	if ui, ok := r.stores[user]; ok {
		return ui, nil
	}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return nil, err
	}
	s, err := sqlstore.Open(filepath.Join(r.dir, fmt.Sprintf("user-%d.db", user)))
	if err != nil {
		return nil, err
	}
	ui := &userIndex{s: s, ids: map[string]int{}}
	evs := make([]events.Envelope, 0, len(mems))
	for i, m := range mems {
		t, err := time.Parse("2006-01-02", m.Time)
		if err != nil {
			t = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		if t.After(ui.now) {
			ui.now = t
		}
		data, _ := json.Marshal(map[string]any{"content": m.Text, "tags": []string{m.Scene, m.Emotion}})
		seq := uint64(i + 1)
		evs = append(evs, events.Envelope{V: events.CurrentVersion, Stream: evalStream, Seq: seq,
			ID: fmt.Sprintf("madial:%d", m.ID), Type: events.TypeMemoryRemember, Time: t.Format(time.RFC3339), Data: data})
		ui.ids[projector.EntryID(evalStream, seq, 0)] = m.ID
	}
	if err := projector.New(s).Fold(r.ctx, evs); err != nil {
		s.Close()
		return nil, err
	}
	ui.now = ui.now.Add(24 * time.Hour)
	if r.stores == nil {
		r.stores = map[int]*userIndex{}
	}
	r.stores[user] = ui
	return ui, nil
}

// Rank implements madial.Retriever.
func (r *recallRetriever) Rank(c madial.Case, candidates []madial.Memory, k int) []int {
	rs := r.RankScored(c, candidates, k)
	out := make([]int, len(rs))
	for i, x := range rs {
		out[i] = x.ID
	}
	return out
}

// RankScored implements madial.ScoredRetriever: the recall path's items
// and their scores.
func (r *recallRetriever) RankScored(c madial.Case, candidates []madial.Memory, k int) []recall.Ranked[int] {
	if r.err != nil {
		return nil
	}
	ui, err := r.index(c.UserID, candidates)
	if err != nil {
		r.err = err
		return nil
	}
	res, err := recall.Find(r.ctx, ui.s, recall.Query{Text: c.Query, Limit: k, Bytes: -1, NoFloor: true,
		Now: ui.now, Timeout: 10 * time.Second, Weights: r.weights})
	if err != nil {
		r.err = err
		return nil
	}
	if res.Partial {
		r.err = fmt.Errorf("case %d: %s", c.ID, res.Note)
		return nil
	}
	out := make([]recall.Ranked[int], 0, len(res.Items))
	for _, it := range res.Items {
		if id, ok := ui.ids[it.ID]; ok {
			out = append(out, recall.Ranked[int]{ID: id, Score: it.Score})
		}
	}
	return out
}

func (r *recallRetriever) close() {
	for _, ui := range r.stores {
		ui.s.Close()
	}
}
