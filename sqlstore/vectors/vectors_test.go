package vectors_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"testing"

	"dshmem/sqlstore"
	"dshmem/sqlstore/encoder"
	"dshmem/sqlstore/madial"
	"dshmem/sqlstore/vectors"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testModel(t testing.TB) *vectors.Model {
	t.Helper()
	m, err := vectors.LoadInstalled(false)
	require.NoError(t, err)
	if m == nil {
		require.NotEqualValues(t, "true", os.Getenv("CI"), "the sentence encoder is needed in CI (dshmem model install; DSHMEM_MODELS)")
		t.Skip("the sentence encoder is not installed (dshmem model install)")
	}
	return m
}

func unit(r *rand.Rand) []float32 {
	v := make([]float32, encoder.Dim)
	var ss float64
	for i := range v {
		x := r.NormFloat64()
		v[i] = float32(x)
		ss += x * x
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(ss))
	}
	return v
}

// TestQuantize: the int8 cosine is within 2e-3 of the float32 one, and
// the same vector always gives the same bytes.
func TestQuantize(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		a, b := unit(r), unit(r)
		want := encoder.Dot(a, b)
		got := vectors.Cosine(a, b)
		assert.InDelta(t, want, got, 2e-3, "cosine")
		assert.InDelta(t, 1, vectors.Cosine(a, a), 2e-3, "cosine with itself")
		s1, c1 := vectors.Quantize(a)
		s2, c2 := vectors.Quantize(slices.Clone(a))
		assert.True(t, s1 == s2 && slices.Equal(c1, c2), "Quantize is not a function of its input")
	}
	s, c := vectors.Quantize(make([]float32, encoder.Dim))
	assert.Zero(t, s)
	assert.Len(t, c, encoder.Dim)
}

// TestCodeBitsAreTheSigns: the sign bits read from a stored code (eight
// bytes at a time) are those of the vector it quantises, bit for bit,
// for every byte value at every position (0 and -128 are not positive).
func TestCodeBitsAreTheSigns(t *testing.T) {
	code := make([]byte, encoder.Dim)
	for shift := range 256 {
		v := make([]float32, encoder.Dim)
		for i := range code {
			code[i] = byte(i + shift)
			v[i] = float32(int8(code[i]))
		}
		require.Equal(t, vectors.SignBits(v), vectors.CodeBits(code), "bytes starting at %d", shift)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 100 {
		v := unit(r)
		_, c := vectors.Quantize(v)
		b := make([]byte, len(c))
		q := make([]float32, len(c))
		for i, x := range c {
			b[i], q[i] = byte(x), float32(x)
		}
		require.Equal(t, vectors.SignBits(q), vectors.CodeBits(b))
	}
}

// TestSignScanFindsTheNearest: on real vectors (MADial en dialogue lines
// and memories, the first 1,000 texts), the sign scan with Rerank re-ranked
// finds the 20 nearest by float32 cosine: at least 99% of them on
// average over 100 queries. With only 64 re-ranked (a sixteenth of the
// vectors, as 256 is of 4,000) it is logged, to show the margin.
func TestSignScanFindsTheNearest(t *testing.T) {
	m := testModel(t)
	dir := "../../testdata/madial"
	if !testing.Short() {
		if _, err := os.Stat("../../../shared/data/madial/MADial-Bench-en-memory.json"); err == nil {
			dir = "../../../shared/data/madial"
		}
	}
	mems, cases, err := madial.Load(dir, "en")
	require.NoError(t, err)
	var texts []string
	for _, mm := range mems {
		texts = append(texts, mm.Text)
	}
	for _, c := range cases {
		texts = append(texts, c.Turns...)
	}
	texts = texts[:min(len(texts), 1000)]
	e := m.Encoder().NewEncoder()
	vs := make([][]float32, len(texts))
	for i, tx := range texts {
		vs[i] = e.Encode(nil, tx)
	}
	nq := min(100, len(cases))
	for _, r := range []int{vectors.Rerank, 64} {
		found, total := 0, 0
		for qi := range nq {
			q := e.EncodeTail(nil, cases[qi].Query)
			idx := make([]int, len(vs))
			for i := range idx {
				idx[i] = i
			}
			sort.SliceStable(idx, func(a, b int) bool { return encoder.Dot(q, vs[idx[a]]) > encoder.Dot(q, vs[idx[b]]) })
			want := idx[:min(20, len(idx))]
			got := vectors.SignScan(q, vs, r, 20)
			for _, w := range want {
				total++
				if slices.Contains(got, w) {
					found++
				}
			}
		}
		share := float64(found) / float64(total)
		t.Logf("%s: %d vectors, %d re-ranked: %.3f of the true top 20 found", dir, len(vs), r, share)
		if r == vectors.Rerank {
			assert.GreaterOrEqual(t, share, 0.99, "the sign scan misses the nearest vectors")
		}
	}
}

// TestWarmSubset: Warm of one kind in one stream loads those vectors
// only, and answers a query of that stream from them; a query of another
// stream, or of every one, is not answered from the subset: the kind is
// loaded again whole.
func TestWarmSubset(t *testing.T) {
	m := testModel(t)
	ctx := context.Background()
	s := storeWithVectors(t, 400) // 100 in each of 4 streams
	stream := func(i int) string { return fmt.Sprintf("ws-%020d", i) }
	for _, other := range [][]string{{stream(2)}, nil} {
		d := vectors.NewDense(m)
		require.NoError(t, d.Warm(ctx, s, []string{sqlstore.VectorEpisode}, []string{stream(1)}))
		require.Equal(t, 100, d.Loaded(s, sqlstore.VectorEpisode), "episodes loaded of one stream")
		require.Zero(t, d.Loaded(s, sqlstore.VectorEntry), "entries loaded")
		hs, err := d.Nearest(ctx, s, sqlstore.VectorEpisode, []string{stream(1)}, "the build fails", 5)
		require.NoError(t, err)
		require.Len(t, hs, 5)
		require.Equal(t, 100, d.Loaded(s, sqlstore.VectorEpisode), "a query of the stream loaded read more")
		hs, err = d.Nearest(ctx, s, sqlstore.VectorEpisode, other, "the build fails", 5)
		require.NoError(t, err)
		assert.Len(t, hs, 5, "a query of %v over the subset of %s", other, stream(1))
		assert.Equal(t, 400, d.Loaded(s, sqlstore.VectorEpisode), "a query of %v did not load the kind whole", other)
	}
	// An empty list of streams is no stream, not every one (slices.Sorted
	// of it is nil, which would read them all).
	d := vectors.NewDense(m)
	require.NoError(t, d.Warm(ctx, s, []string{sqlstore.VectorEpisode}, []string{}))
	assert.Zero(t, d.Loaded(s, sqlstore.VectorEpisode), "Warm of no stream loaded some")
}

// TestNearestKeepsToTheScopes: a query of a stream that holds fewer
// vectors than are re-ranked gets none of another stream's (the ties
// that fill the re-ranked set are of the scopes only).
func TestNearestKeepsToTheScopes(t *testing.T) {
	m := testModel(t)
	ctx := context.Background()
	s := storeWithVectors(t, 400) // 100 in each of 4 streams, n = i+1 in stream ws-(i%4)
	d := vectors.NewDense(m)
	hs, err := d.Nearest(ctx, s, sqlstore.VectorEpisode, []string{fmt.Sprintf("ws-%020d", 1)}, "the build fails", 20)
	require.NoError(t, err)
	require.Len(t, hs, 20)
	for _, h := range hs {
		assert.EqualValues(t, 1, (h.N-1)%4, "hit %d is of another stream", h.N)
	}
}
