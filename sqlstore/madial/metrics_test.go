package madial

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name          string
		ranked        []int
		relevant      []int
		recall        map[int]float64
		ndcg          map[int]float64
		ndcgRetrieved map[int]float64
	}{
		{
			name:     "PerfectRanking",
			ranked:   []int{1, 2, 9, 8},
			relevant: []int{2, 1},
			recall:   map[int]float64{1: 0.5, 3: 1, 5: 1, 10: 1, 20: 1},
			ndcg:     map[int]float64{5: 1, 10: 1},
			// both hits lead, so the retrieved-ideal variant is 1 as well
			ndcgRetrieved: map[int]float64{5: 1, 10: 1},
		},
		{
			name:          "OneRelevantAtRank2",
			ranked:        []int{9, 5},
			relevant:      []int{5},
			recall:        map[int]float64{1: 0, 3: 1, 5: 1, 10: 1, 20: 1},
			ndcg:          map[int]float64{5: 0.6309297535714575, 10: 0.6309297535714575}, // 1/log2(3)
			ndcgRetrieved: map[int]float64{5: 0.6309297535714575, 10: 0.6309297535714575},
		},
		{
			name:     "TwoOfThreeFound",
			ranked:   []int{4, 1, 5, 2},
			relevant: []int{1, 2, 3},
			recall:   map[int]float64{1: 0, 3: 1.0 / 3, 5: 2.0 / 3, 10: 2.0 / 3, 20: 2.0 / 3},
			// (1/log2 3 + 1/log2 5) / (1 + 1/log2 3 + 1/log2 4)
			ndcg: map[int]float64{5: 0.49818925746641285, 10: 0.49818925746641285},
			// upstream divides by the ideal of the 2 retrieved hits instead
			ndcgRetrieved: map[int]float64{5: 0.6509209298071326, 10: 0.6509209298071326},
		},
		{
			name:          "RepeatsCountOnce",
			ranked:        []int{7, 7, 7, 5},
			relevant:      []int{5},
			recall:        map[int]float64{1: 0, 3: 1, 5: 1, 10: 1, 20: 1},
			ndcg:          map[int]float64{5: 0.6309297535714575, 10: 0.6309297535714575},
			ndcgRetrieved: map[int]float64{5: 0.6309297535714575, 10: 0.6309297535714575},
		},
		{
			name:          "MissingRankingScoresZero",
			ranked:        nil,
			relevant:      []int{3},
			recall:        map[int]float64{1: 0, 3: 0, 5: 0, 10: 0, 20: 0},
			ndcg:          map[int]float64{5: 0, 10: 0},
			ndcgRetrieved: map[int]float64{5: 0, 10: 0},
		},
		{
			name:          "HitBeyondCutoff",
			ranked:        []int{11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 3},
			relevant:      []int{3},
			recall:        map[int]float64{1: 0, 3: 0, 5: 0, 10: 0, 20: 1},
			ndcg:          map[int]float64{5: 0, 10: 0},
			ndcgRetrieved: map[int]float64{5: 0, 10: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Case{ID: 7, Relevant: tt.relevant}
			ranked := map[int][]int{}
			if tt.ranked != nil {
				ranked[7] = tt.ranked
			}
			m := Evaluate(ranked, []Case{c})
			require.EqualValues(t, 1, m.N, "N = %d, want 1", m.N)
			for k, want := range tt.recall {
				got := m.Recall[k]
				assert.True(t, near(got, want), "R@%d = %v, want %v", k, got, want)
			}
			for k, want := range tt.ndcg {
				got := m.NDCG[k]
				assert.True(t, near(got, want), "nDCG@%d = %v, want %v", k, got, want)
			}
			for k, want := range tt.ndcgRetrieved {
				got := m.NDCGRetrieved[k]
				assert.True(t, near(got, want), "NDCGRetrieved@%d = %v, want %v", k, got, want)
			}
		})
	}
}

func TestEvaluateAverages(t *testing.T) {
	cases := []Case{
		{ID: 1, Relevant: []int{1}},    // found at rank 1
		{ID: 2, Relevant: []int{1, 2}}, // half found at rank 1
		{ID: 3, Relevant: nil},         // unlabelled: skipped
	}
	ranked := map[int][]int{1: {1}, 2: {2, 9}, 3: {4}}
	m := Evaluate(ranked, cases)
	t.Run("SkipsUnlabelled", func(t *testing.T) {
		assert.EqualValues(t, 2, m.N, "N = %d, want 2", m.N)
	})
	t.Run("MacroAverage", func(t *testing.T) {
		// per case 1 and 0.5: mean 0.75 (a pooled fraction would be 2/3,
		// a hit rate 1)
		got := m.Recall[1]
		assert.True(t, near(got, 0.75), "R@1 = %v, want 0.75", got)
	})
	t.Run("Empty", func(t *testing.T) {
		m := Evaluate(nil, nil)
		assert.False(t, m.N != 0 || m.Recall[10] != 0, "got %+v, want zero", m)
	})
}
