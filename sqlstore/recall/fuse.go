package recall

import (
	"math"
	"sort"
)

// Ranked is one candidate of a ranking, best first in its list.
type Ranked[K comparable] struct {
	ID    K
	Score float64
}

// FuseDense merges a lexical ranking with a dense one (cosines, best
// first) into one ranking, with Weights.DenseBlend (see there for the
// figures that chose it). Scores are normalised per query: the lexical
// ones by the best lexical score, the dense ones min–max over the dense
// list given (its last is 0, its first 1). Then
//
//	fused = lex + DenseBlend · dense · (1 − lex)
//
// so a document's fused score lies between its lexical score and 1: the
// best lexical hit keeps 1 and stays first (ties go to the lexical
// order), a strong lexical hit barely moves, and the dense side can only
// lift what the words missed. A document in only one list has 0 for the
// other. An empty dense list returns lex unchanged.
func FuseDense[K comparable](lex, dense []Ranked[K], w *Weights) []Ranked[K] {
	if len(dense) == 0 || w.DenseBlend <= 0 {
		return lex
	}
	type acc struct {
		lex, dense float64
		lexRank    int
	}
	m := make(map[K]*acc, len(lex)+len(dense))
	order := make([]K, 0, len(lex)+len(dense))
	top := 0.0
	for _, r := range lex {
		top = math.Max(top, r.Score)
	}
	for i, r := range lex {
		if _, ok := m[r.ID]; ok {
			continue
		}
		a := &acc{lexRank: i}
		if top > 0 {
			a.lex = r.Score / top
		}
		m[r.ID] = a
		order = append(order, r.ID)
	}
	hi, lo := dense[0].Score, dense[len(dense)-1].Score
	for _, r := range dense {
		a, ok := m[r.ID]
		if !ok {
			a = &acc{lexRank: len(lex) + len(order)}
			m[r.ID] = a
			order = append(order, r.ID)
		}
		if hi > lo {
			a.dense = math.Max(a.dense, (r.Score-lo)/(hi-lo))
		}
	}
	out := make([]Ranked[K], len(order))
	for i, id := range order {
		a := m[id]
		out[i] = Ranked[K]{ID: id, Score: a.lex + w.DenseBlend*a.dense*(1-a.lex)}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}
