package madial

import (
	"sort"

	"dshmem/sqlstore/encoder"
	"dshmem/sqlstore/recall"
)

// Dense ranks a user's memories by the cosine of unit vectors (an
// embedding model's). Query or Memory returning nil means "no vector":
// a case without a query vector ranks nothing, a memory without one is
// not a candidate.
type Dense struct {
	Query  func(c Case) []float32
	Memory func(m Memory) []float32
}

// Scores returns the k memories nearest the query, best first (ties go to
// the lower id).
func (d Dense) Scores(c Case, candidates []Memory, k int) []recall.Ranked[int] {
	q := d.Query(c)
	if q == nil || k <= 0 {
		return nil
	}
	out := make([]recall.Ranked[int], 0, len(candidates))
	for _, m := range candidates {
		v := d.Memory(m)
		if v == nil {
			continue
		}
		var dot float32
		for i := range q {
			dot += q[i] * v[i]
		}
		out = append(out, recall.Ranked[int]{ID: m.ID, Score: float64(dot)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	return out[:min(k, len(out))]
}

// Rank implements Retriever.
func (d Dense) Rank(c Case, candidates []Memory, k int) []int {
	return ids(d.Scores(c, candidates, k))
}

// ScoredRetriever is a Retriever that also gives its scores.
type ScoredRetriever interface {
	RankScored(c Case, candidates []Memory, k int) []recall.Ranked[int]
}

// Fused ranks with recall.FuseDense over a lexical ranking and Dense,
// both cut to Pool (0: k), as recall fuses them.
type Fused struct {
	Lexical ScoredRetriever
	Dense   Dense
	Weights *recall.Weights
	Pool    int
}

// Rank implements Retriever.
func (f Fused) Rank(c Case, candidates []Memory, k int) []int {
	pool := f.Pool
	if pool <= 0 {
		pool = k
	}
	lex := f.Lexical.RankScored(c, candidates, pool)
	return ids(recall.FuseDense(lex, f.Dense.Scores(c, candidates, pool), f.Weights))
}

func ids(rs []recall.Ranked[int]) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// EncoderDense ranks by the sentence encoder's cosines. Memories and
// queries that are not English (encoder.English) get no vector, so a
// Chinese case ranks with the words alone. A query is the dialogue up to
// the test turn, its last encoder.MaxPieces pieces when longer.
func EncoderDense(m *encoder.Model) Dense {
	e := m.NewEncoder()
	queries, memories := map[int][]float32{}, map[int][]float32{}
	// vector encodes text once per id; nil when it is not English.
	vector := func(seen map[int][]float32, id int, text string, encode func([]float32, string) []float32) []float32 {
		v, ok := seen[id]
		if !ok {
			if encoder.English(text) {
				v = encode(nil, text)
			}
			seen[id] = v
		}
		return v
	}
	return Dense{
		Query:  func(c Case) []float32 { return vector(queries, c.ID, c.Query, e.EncodeTail) },
		Memory: func(mm Memory) []float32 { return vector(memories, mm.ID, mm.Text, e.Encode) },
	}
}
