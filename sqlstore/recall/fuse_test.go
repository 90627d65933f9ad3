package recall

import (
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
