package madial

import "math"

// Cutoffs at which Evaluate reports recall and nDCG.
var (
	RecallAt = []int{1, 3, 5, 10, 20}
	NDCGAt   = []int{5, 10}
)

// Metrics are means over the evaluated cases.
type Metrics struct {
	N      int             // cases evaluated (those with at least one relevant id)
	Recall map[int]float64 // k -> mean over cases of |top k ∩ relevant| / |relevant|
	NDCG   map[int]float64 // k -> mean binary nDCG@k, ideal = all relevant ranked first

	// NDCGRetrieved is the variant upstream's embedding_score_new.py
	// computes, whose ideal ordering sorts only the retrieved top k (so a
	// list whose few hits lead scores 1 however many relevant memories it
	// missed). Kept only to check against the paper's tables; compare
	// retrievers with NDCG.
	NDCGRetrieved map[int]float64
}

// Evaluate scores rankings (case id -> memory ids, best first) against the
// labels of cases. It is the one metric code path for our retrievers and
// the published baselines.
//
// Recall@k of a case is the fraction of its relevant ids found among the
// first k ranked ids; Recall[k] is its mean over cases (macro average).
// This is what reproduces the published zh figures (R@10: BGE-M3 0.714,
// Stella 0.740, OpenAI 0.824); hit rate or a pooled (micro) fraction
// would not. A ranked id counts once (later repeats are ignored), a case
// missing from ranked scores 0, and a case with no relevant ids is skipped.
//
// nDCG@k uses gain 1 for a relevant id, discount 1/log2(rank+1), and the
// ideal DCG of min(k, |relevant|) hits at the top.
func Evaluate(ranked map[int][]int, cases []Case) Metrics {
	m := Metrics{
		Recall:        make(map[int]float64, len(RecallAt)),
		NDCG:          make(map[int]float64, len(NDCGAt)),
		NDCGRetrieved: make(map[int]float64, len(NDCGAt)),
	}
	for _, c := range cases {
		if len(c.Relevant) == 0 {
			continue
		}
		m.N++
		rel := make(map[int]bool, len(c.Relevant))
		for _, id := range c.Relevant {
			rel[id] = true
		}
		hits := hitList(ranked[c.ID], rel)
		for _, k := range RecallAt {
			m.Recall[k] += float64(countTrue(hits[:min(k, len(hits))])) / float64(len(rel))
		}
		for _, k := range NDCGAt {
			top := hits[:min(k, len(hits))]
			dcg := dcg(top)
			m.NDCG[k] += dcg / idealDCG(min(k, len(rel)))
			if n := countTrue(top); n > 0 {
				m.NDCGRetrieved[k] += dcg / idealDCG(n)
			}
		}
	}
	if m.N > 0 {
		for _, mm := range []map[int]float64{m.Recall, m.NDCG, m.NDCGRetrieved} {
			for k := range mm {
				mm[k] /= float64(m.N)
			}
		}
	}
	return m
}

// hitList marks, for each distinct ranked id in order, whether it is relevant.
func hitList(ranked []int, rel map[int]bool) []bool {
	seen := make(map[int]bool, len(ranked))
	hits := make([]bool, 0, len(ranked))
	for _, id := range ranked {
		if seen[id] {
			continue
		}
		seen[id] = true
		hits = append(hits, rel[id])
	}
	return hits
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

// dcg is the binary discounted cumulative gain of hits (rank 1 first).
func dcg(hits []bool) float64 {
	s := 0.0
	for i, h := range hits {
		if h {
			s += 1 / math.Log2(float64(i+2))
		}
	}
	return s
}

// idealDCG is the DCG of n hits at ranks 1..n.
func idealDCG(n int) float64 {
	s := 0.0
	for i := range n {
		s += 1 / math.Log2(float64(i+2))
	}
	return s
}
