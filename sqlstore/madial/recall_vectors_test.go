package madial

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"testing"

	"dshmem/sqlstore/recall"
	"dshmem/sqlstore/vectors"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecallWithVectors runs MADial through the real recall path with the
// encoder: each user's memories folded into an index, their vectors
// filled as the server fills them (vectors.Fill), and recall.Find with a
// Dense. zh: every case ranks exactly as without the model (the same ids
// with the same scores: no Chinese text or query gets a vector). en, on
// the full data: R@10 ≥ 0.72 and R@5 not below the words alone (issue
// 15's targets); on the in-repository subset (-short), fused at least as
// good as the words at R@5 and R@10.
func TestRecallWithVectors(t *testing.T) {
	m := evalTestModel(t)
	dir := "../../testdata/madial"
	if !testing.Short() {
		dir = fullDir(t)
	}
	ctx := context.Background()
	d := vectors.NewDense(vectors.NewModel(m))
	for _, lang := range []string{"zh", "en"} {
		memories, cases, err := Load(dir, lang)
		require.NoError(t, err)
		tmp := t.TempDir()
		lex := &recallRetriever{ctx: ctx, dir: filepath.Join(tmp, "lex")}
		vec := &recallRetriever{ctx: ctx, dir: filepath.Join(tmp, "vec"), dense: d}
		if lang == "zh" {
			byUser := map[int][]Memory{}
			for _, mm := range memories {
				byUser[mm.UserID] = append(byUser[mm.UserID], mm)
			}
			for _, c := range cases {
				want := topK(tiesByID(lex.RankScored(c, byUser[c.UserID], benchK+10)), benchK)
				got := topK(tiesByID(vec.RankScored(c, byUser[c.UserID], benchK+10)), benchK)
				assert.Equal(t, want, got, "zh case %d with the model: got %v, want %v", c.ID, got, want)
			}
			for _, ui := range vec.stores {
				e, ep, _, err := ui.s.VectorCounts(ctx)
				require.NoError(t, err)
				assert.Zero(t, e+ep, "a zh index holds vectors")
			}
		} else {
			ml := Evaluate(Run(lex, memories, cases, benchK), cases)
			mv := Evaluate(Run(vec, memories, cases, benchK), cases)
			t.Logf("%s en: words R@5 %.3f R@10 %.3f; with vectors R@5 %.3f R@10 %.3f", dir, ml.Recall[5], ml.Recall[10], mv.Recall[5], mv.Recall[10])
			assert.GreaterOrEqual(t, mv.Recall[5], ml.Recall[5], "en R@5 with vectors below the words alone")
			assert.GreaterOrEqual(t, mv.Recall[10], ml.Recall[10], "en R@10 with vectors below the words alone")
			if !testing.Short() {
				assert.GreaterOrEqual(t, mv.Recall[10], 0.72, "en R@10 with vectors")
			}
		}
		lex.close()
		vec.close()
		require.NoError(t, lex.err)
		require.NoError(t, vec.err)
	}
}

// tiesByID orders the items of equal (rounded) score by id: recall.Find
// orders exact ties differently from one call to the next (their
// unrounded scores differ in the last bits, e.g. full zh case 106), with
// or without the model.
func tiesByID(rs []recall.Ranked[int]) []recall.Ranked[int] {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b recall.Ranked[int]) int {
		if a.Score != b.Score {
			return cmp.Compare(b.Score, a.Score)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// topK cuts rs to its first k, less the items tied with the first one
// left out: which of a tie group straddling the cut is kept changes from
// one call to the next (full zh case 63), with or without the model.
func topK(rs []recall.Ranked[int], k int) []recall.Ranked[int] {
	if len(rs) <= k {
		return rs
	}
	cut := rs[k].Score
	n := k
	for n > 0 && rs[n-1].Score == cut {
		n--
	}
	return rs[:n]
}
