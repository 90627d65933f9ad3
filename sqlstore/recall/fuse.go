package recall

import (
	"math"
	"sort"

	"dshmem/sqlstore"
	"dshmem/sqlstore/vectors"
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
// list given (its last is 0, its first 1; a list of one, or of equal
// cosines, is all 1: the nearest of the scopes, as the first of a longer
// list is). Then
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
		a.dense = math.Max(a.dense, minMax(r.Score, hi, lo))
	}
	out := make([]Ranked[K], len(order))
	for i, id := range order {
		a := m[id]
		out[i] = Ranked[K]{ID: id, Score: a.lex + w.DenseBlend*a.dense*(1-a.lex)}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}

// minMax is x normalised min–max between lo and hi, or 1 when hi is lo
// (the list's only cosine): a scope holding one vector has a nearest,
// whose score is its first's, 1. (Until a scan of few vectors stopped
// filling its list with other scopes' vectors, those were the reference
// that put it below 1.)
func minMax(x, hi, lo float64) float64 {
	if hi <= lo {
		return 1
	}
	return (x - lo) / (hi - lo)
}

// nearest returns the Weights.DenseK vectors of src's kind in the
// query's scopes nearest its text, when the query has a Dense and the
// text is English (else none: the ranking is then exactly the lexical
// one).
func (r *call) nearest(src *source, text string) ([]vectors.Hit, error) {
	if r.q.Dense == nil || r.w.DenseBlend <= 0 || r.w.DenseK <= 0 {
		return nil, nil
	}
	kind := sqlstore.VectorEntry
	if src.kind == KindEpisodic {
		kind = sqlstore.VectorEpisode
	}
	if r.expired("finding the nearest vectors") {
		return nil, nil
	}
	return r.q.Dense.Nearest(r.ctx, r.s, kind, r.q.Scopes, text, r.w.DenseK)
}

// fuse blends the dense hits into the scored candidates with FuseDense.
// The fused score (between a candidate's normalised lexical score and 1)
// is put back on the lexical scale, times the best lexical score, so the
// kinds of a search of both still compare and the floors of pick keep
// their meaning. A candidate holds its normalised dense score for pick's
// floor. Without hits, out is returned as it is.
func (r *call) fuse(out []scored, dense []vectors.Hit) []scored {
	if len(dense) == 0 {
		return out
	}
	at := make(map[int64]int, len(out))
	lex := make([]Ranked[int64], 0, len(out))
	top := 0.0
	for i, sc := range out {
		at[sc.n] = i
		if sc.score > 0 {
			lex = append(lex, Ranked[int64]{ID: sc.n, Score: sc.score})
		}
		top = max(top, sc.score)
	}
	sort.SliceStable(lex, func(i, j int) bool { return lex[i].Score > lex[j].Score })
	// Normalised over every nearest vector of the scopes, not only those
	// still candidates: a hit whose text was forgotten (its vector stays
	// until the next fill) or not fetched by the deadline does not make
	// a far survivor the first.
	all := make([]Ranked[int64], len(dense))
	anyCandidate := false
	for i, h := range dense {
		all[i] = Ranked[int64]{ID: h.N, Score: h.Cosine}
		_, ok := at[h.N]
		anyCandidate = anyCandidate || ok
	}
	if !anyCandidate {
		return out
	}
	hi, lo := all[0].Score, all[len(all)-1].Score
	for _, d := range all {
		if i, ok := at[d.ID]; ok {
			out[i].dense = minMax(d.Score, hi, lo)
		}
	}
	if top <= 0 {
		top = 1 // nothing matched by words: the dense side alone, on a unit scale
	}
	for _, f := range FuseDense(lex, all, r.w) {
		i, ok := at[f.ID]
		if !ok {
			continue // a nearest vector whose text is not a candidate
		}
		sc := &out[i]
		sc.score = f.Score * top
		sc.item.Score = round4(sc.score)
	}
	return out
}
