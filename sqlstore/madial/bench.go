package madial

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"dshmem/sqlstore/encoder"
	"dshmem/sqlstore/recall"
	"dshmem/sqlstore/vectors"
)

// BenchOptions configure Bench. The zero value works: dshmem recall with
// recall.DefaultWeights, no dense rows.
type BenchOptions struct {
	// Weights of the recall ranking; nil means recall.DefaultWeights.
	Weights *recall.Weights
	// Model, when set, adds per language the fused ranking (recall +
	// dense), and for English the dense ranking alone.
	Model *encoder.Model
}

// Result is one retriever's figures on one language: a row of
// 'dshmem eval madial', and its JSON form.
type Result struct {
	Lang      string             `json:"lang"`
	Retriever string             `json:"retriever"`
	Cases     int                `json:"cases"`
	Recall    map[string]float64 `json:"recall"`
	NDCG      map[string]float64 `json:"ndcg"`
	// Floors, on a row of Floors, are its floored figures.
	Floors *Floored `json:"floors,omitempty"`
}

func newResult(lang, name string, m Metrics) Result {
	r := Result{Lang: lang, Retriever: name, Cases: m.N, Recall: map[string]float64{}, NDCG: map[string]float64{}}
	for k, v := range m.Recall {
		r.Recall[strconv.Itoa(k)] = v
	}
	for k, v := range m.NDCG {
		r.NDCG[strconv.Itoa(k)] = v
	}
	return r
}

// benchK is how many memories every retriever ranks per case.
const benchK = 20

// Bench runs the benchmark in dir (MADial-Bench-{zh,en}-{memory,dialogue}.json
// and baselines-zh/): per language, dshmem recall (each user's memories
// folded as memory/remember events into a temporary index, the dialogue up
// to its test turn as the query of the real recall path, no score floor),
// the dense and fused rankings when o.Model is set, and the lexical floor;
// then the published zh baselines, scored with the same metric code.
func Bench(ctx context.Context, dir string, o BenchOptions) ([]Result, error) {
	w := o.Weights
	if w == nil {
		w = &recall.DefaultWeights
	}
	tmp, err := os.MkdirTemp("", "dshmem-eval-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var rows []Result
	var zhCases []Case
	for _, lang := range []string{"zh", "en"} {
		memories, cases, err := Load(dir, lang)
		if err != nil {
			return nil, fmt.Errorf("eval madial: %w", err)
		}
		if lang == "zh" {
			zhCases = cases
		}
		r := &recallRetriever{ctx: ctx, dir: filepath.Join(tmp, lang), weights: w}
		rows = append(rows, newResult(lang, "dshmem recall", Evaluate(Run(r, memories, cases, benchK), cases)))
		if o.Model != nil {
			d := EncoderDense(o.Model)
			if lang == "en" {
				rows = append(rows, newResult(lang, "dense "+encoder.ModelID, Evaluate(Run(d, memories, cases, benchK), cases)))
			}
			f := Fused{Lexical: r, Dense: d, Weights: w}
			rows = append(rows, newResult(lang, "dshmem recall+dense", Evaluate(Run(f, memories, cases, benchK), cases)))
			// The same fusion inside recall.Find: the memories' vectors
			// stored in the index (int8) and found by its scan.
			rv := &recallRetriever{ctx: ctx, dir: filepath.Join(tmp, lang+"-vectors"), weights: w, dense: vectors.NewDense(vectors.NewModel(o.Model))}
			rows = append(rows, newResult(lang, "dshmem recall+vectors", Evaluate(Run(rv, memories, cases, benchK), cases)))
			rv.close()
			if rv.err != nil {
				return nil, fmt.Errorf("eval madial %s: %w", lang, rv.err)
			}
		}
		r.close()
		if r.err != nil {
			return nil, fmt.Errorf("eval madial %s: %w", lang, r.err)
		}
		rows = append(rows, newResult(lang, "lexical floor", Evaluate(Run(Lexical{}, memories, cases, benchK), cases)))
	}
	base, err := LoadBaselines(filepath.Join(dir, "baselines-zh"))
	if err != nil {
		return nil, fmt.Errorf("eval madial: %w", err)
	}
	names := make([]string, 0, len(base))
	for n := range base {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rows = append(rows, newResult("zh", n, Evaluate(base[n], zhCases)))
	}
	return rows, nil
}

// InstalledEncoder loads the encoder 'dshmem model install' put in its
// default folder, for BenchOptions.Model. note says which model it is and
// how it is fused, or, with a nil model, why there is none.
func InstalledEncoder() (m *encoder.Model, note string) {
	dir, err := encoder.DefaultDir()
	if err == nil {
		err = encoder.Verify(dir)
	}
	if err == nil {
		m, err = encoder.Load(dir)
	}
	if err != nil {
		return nil, fmt.Sprintf("dense: none (%v)", err)
	}
	return m, fmt.Sprintf("dense: %s (%s), English queries and memories only; fused with recall.FuseDense, DenseBlend %.2f",
		encoder.ModelID, encoder.ModelVersion, recall.DefaultWeights.DenseBlend)
}
