package madial

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"dshmem/sqlstore/encoder"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evalTestModel is the installed encoder; CI (CI=true) installs it, so
// there its absence fails the test instead of skipping it.
func evalTestModel(t *testing.T) *encoder.Model {
	t.Helper()
	m, note := InstalledEncoder()
	if m == nil {
		require.NotEqualValues(t, "true", os.Getenv("CI"), "the model is needed in CI: %s", note)
		t.Skip(note)
	}
	return m
}

// TestFusedChineseUnchanged: with the model, no zh case or memory gets a
// vector, so each zh case ranks exactly as its lexical ranking (compared
// on the same lexical list: recall.Find orders exact ties differently
// from one call to the next, e.g. full zh case 149), and the zh figures
// are today's; English cases all get dense scores.
func TestFusedChineseUnchanged(t *testing.T) {
	m := evalTestModel(t)
	dirs := []string{"../../testdata/madial"}
	if !testing.Short() {
		dirs = append(dirs, fullDir(t))
	}
	for _, dir := range dirs {
		memories, cases, err := Load(dir, "zh")
		require.NoError(t, err)
		byUser := map[int][]Memory{}
		for _, mm := range memories {
			byUser[mm.UserID] = append(byUser[mm.UserID], mm)
		}
		r := &recallRetriever{ctx: context.Background(), dir: filepath.Join(t.TempDir(), "zh")}
		d := EncoderDense(m)
		for _, c := range cases {
			got := d.Scores(c, byUser[c.UserID], 20)
			assert.Nil(t, got, "%s zh case %d: dense scores %v, want none", dir, c.ID, got)
			lex := r.RankScored(c, byUser[c.UserID], 20)
			fused := recall.FuseDense(lex, d.Scores(c, byUser[c.UserID], 20), &recall.DefaultWeights)
			assert.True(t, slices.Equal(fused, lex), "%s zh case %d: fused %v, want the lexical ranking %v", dir, c.ID, fused, lex)
		}
		for _, mm := range memories {
			v := d.Memory(mm)
			assert.Nil(t, v, "%s zh memory %d (%q) has a vector", dir, mm.ID, mm.Text)
		}
		r.close()
		require.Nil(t, r.err, r.err)
		t.Logf("%s: %d zh cases ranked as without the model", dir, len(cases))
	}
	memories, cases, err := Load("../../testdata/madial", "en")
	require.NoError(t, err)
	d := EncoderDense(m)
	scored := 0
	for _, c := range cases {
		if len(d.Scores(c, memories, 5)) > 0 {
			scored++
		}
	}
	assert.Equal(t, len(cases), scored, "got %d of %d en cases with dense scores, want all", scored, len(cases))
}
