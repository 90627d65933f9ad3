package recall

import (
	"dshmem/sqlstore/vectors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFuseDense(t *testing.T) {
	w := DefaultWeights
	lex := []Ranked[int]{{1, 4}, {2, 3}, {3, 1}, {4, 0.5}}
	t.Run("NoDenseKeepsLexical", func(t *testing.T) {
		got := FuseDense(lex, nil, &w)
		assert.True(t, slices.Equal(got, lex), "got %v, want %v", got, lex)
		off := w
		off.DenseBlend = 0
		if got := FuseDense(lex, []Ranked[int]{{4, 0.9}, {3, 0.1}}, &off); !slices.Equal(got, lex) {
			t.Errorf("DenseBlend 0: got %v, want %v", got, lex)
		}
	})
	t.Run("TopLexicalStaysFirst", func(t *testing.T) {
		dense := []Ranked[int]{{4, 0.9}, {5, 0.8}, {3, 0.7}, {1, 0.1}}
		got := FuseDense(lex, dense, &w)
		assert.False(t, got[0].ID != 1 || got[0].Score != 1, "got %v, want id 1 first with 1", got)
		// Dense min–max: 4 → 1, 5 → 0.875, 3 → 0.75, 1 → 0. Fused: 4 0.125+1·0.875 = 1
		// (tied with 1, after it), 5 0.875, 3 0.25+0.75·0.75 = 0.8125, 2 0.75.
		want := []int{1, 4, 5, 3, 2}
		ids := make([]int, len(got))
		for i, r := range got {
			ids[i] = r.ID
		}
		assert.True(t, slices.Equal(ids, want), "got order %v (%v), want %v", ids, got, want)
		for _, r := range got {
			for _, l := range lex {
				if l.ID == r.ID && r.Score < l.Score/4-1e-12 {
					t.Errorf("id %d: fused %v below its lexical %v", r.ID, r.Score, l.Score/4)
				}
			}
		}
	})
	t.Run("LoneDenseHitIsTheNearest", func(t *testing.T) {
		// One vector in the scopes: it is their nearest, normalised 1
		// like the first of a longer list, not 0 like its last.
		got := FuseDense(lex, []Ranked[int]{{5, 0.3}}, &w)
		var five float64
		for _, r := range got {
			if r.ID == 5 {
				five = r.Score
			}
		}
		assert.InDelta(t, w.DenseBlend, five, 1e-12, "a lone dense hit: got %v", got)
	})
}

// TestFuseNormalisesOverEveryNearest: a candidate's dense score is set
// against every nearest vector of the scopes, not only the ones still
// candidates. When 19 of 20 hits were dropped (their entries forgotten,
// their vectors not yet; or not fetched by the deadline), the lone
// survivor, the 20th nearest, scores 0 and does not pass DenseFloor; the
// nearest, when it survives, scores 1. Mutation caught: normalising over
// the surviving hits (the survivor then scores 1, above the floor).
func TestFuseNormalisesOverEveryNearest(t *testing.T) {
	w := DefaultWeights
	r := &call{w: &w}
	var hits []vectors.Hit
	for i := range 20 {
		hits = append(hits, vectors.Hit{N: int64(i + 1), Cosine: 0.9 - 0.02*float64(i)})
	}
	far := r.fuse([]scored{{n: 20, score: 1}}, hits)
	assert.Zero(t, far[0].dense, "the 20th nearest, alone a candidate: dense %v, want 0", far[0].dense)
	assert.Less(t, far[0].dense, w.DenseFloor)
	near := r.fuse([]scored{{n: 1, score: 1}}, hits)
	assert.Equal(t, 1.0, near[0].dense, "the nearest, alone a candidate")
	none := r.fuse([]scored{{n: 99, score: 1}}, hits)
	assert.Zero(t, none[0].dense, "a candidate with no vector")
	assert.Equal(t, 1.0, none[0].score, "a candidate with no vector keeps its score")
}
