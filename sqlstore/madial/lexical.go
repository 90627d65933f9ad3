package madial

import (
	"math"
	"sort"

	"dshmem/sqlstore/tokenize"
)

// Lexical is a floor baseline: it scores a memory by the summed idf of the
// distinct query terms its text contains (terms from tokenize.Terms, idf
// over the candidate set: ln(1 + (N - df + 0.5) / (df + 0.5))). No term
// frequency, no length normalization, no model. Ties go to the lower id.
type Lexical struct{}

// Rank implements Retriever.
func (Lexical) Rank(c Case, candidates []Memory, k int) []int {
	if k <= 0 {
		return nil
	}
	docs := make([]map[string]bool, len(candidates))
	df := make(map[string]int)
	for i, m := range candidates {
		docs[i] = make(map[string]bool)
		for _, t := range tokenize.Terms(m.Text) {
			docs[i][t] = true
			df[t]++
		}
	}
	n := float64(len(candidates))
	type scored struct {
		id    int
		score float64
	}
	ss := make([]scored, len(candidates))
	terms := tokenize.Terms(c.Query)
	for i, m := range candidates {
		ss[i].id = m.ID
		for _, t := range terms {
			if docs[i][t] {
				d := float64(df[t])
				ss[i].score += math.Log(1 + (n-d+0.5)/(d+0.5))
			}
		}
	}
	sort.Slice(ss, func(a, b int) bool {
		if ss[a].score != ss[b].score {
			return ss[a].score > ss[b].score
		}
		return ss[a].id < ss[b].id
	})
	out := make([]int, 0, min(k, len(ss)))
	for _, s := range ss[:min(k, len(ss))] {
		out = append(out, s.id)
	}
	return out
}
