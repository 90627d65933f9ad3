package encoder

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testModel loads the installed model ($DSHMEM_MODELS, else the user
// cache). Without it the test is skipped, except in CI (CI=true), where
// .ci/run installs it first and its absence is a failure.
func testModel(t testing.TB) *Model {
	t.Helper()
	m, err := loadTestModel()
	if err != nil {
		require.NotEqualValues(t, "true", os.Getenv("CI"), "the model is needed in CI: %v", err)
		t.Skipf("model not installed (`dshmem model install`): %v", err)
	}
	return m
}

var loadTestModel = sync.OnceValues(func() (*Model, error) {
	dir, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	if err := Verify(dir); err != nil {
		return nil, err
	}
	return Load(dir)
})

type goldenCase struct {
	Text   string    `json:"text"`
	IDs    []int32   `json:"ids"`
	Vector []float64 `json:"vector"`
}

func readGolden(t testing.TB) []goldenCase {
	t.Helper()
	b, err := os.ReadFile("testdata/golden.json")
	require.NoError(t, err)
	var g struct{ Cases []goldenCase }
	require.NoError(t, json.Unmarshal(b, &g))
	require.False(t, len(g.Cases) < 50, "golden.json holds %d cases, want at least 50", len(g.Cases))
	return g.Cases
}

// TestGoldenTokens checks the tokenizer against the JavaScript one on
// every golden sentence (empty, emoji, long, mixed scripts among them).
func TestGoldenTokens(t *testing.T) {
	m := testModel(t)
	for _, c := range readGolden(t) {
		got := m.Tok.Encode(c.Text)
		assert.True(t, slices.Equal(got, c.IDs), "%q: got %v, want %v", c.Text, got, c.IDs)
	}
}

// TestGoldenVectors checks the forward pass against tfjs 4.22.0 (CPU):
// cosine within 1e-4 of every reference vector.
func TestGoldenVectors(t *testing.T) {
	m := testModel(t)
	e := m.NewEncoder()
	worst := 1.0
	var v []float32
	for _, c := range readGolden(t) {
		v = e.Encode(v, c.Text)
		var dot, nv, nr float64
		for i, x := range v {
			dot += float64(x) * c.Vector[i]
			nv += float64(x) * float64(x)
			nr += c.Vector[i] * c.Vector[i]
		}
		cos := dot / math.Sqrt(nv*nr)
		worst = min(worst, cos)
		assert.False(t, cos < 1-1e-4, "%q (%d pieces): cosine %.6f to the reference, want ≥ %.6f", c.Text, len(c.IDs), cos, 1-1e-4)
		assert.False(t, math.Abs(nv-1) > 1e-5, "%q: norm² %v, want 1", c.Text, nv)
	}
	t.Logf("worst cosine %.8f", worst)
}
