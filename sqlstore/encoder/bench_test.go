package encoder

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queries are short texts of at most 32 pieces, as a recall query is.
var queries = []string{
	"What did we decide about the database migrations last week?",
	"How should I celebrate my promotion this weekend?",
	"the api fails to start after the upgrade",
	"I feel lonely since my best friend moved to another city.",
	"which port does the dev server listen on",
	"Remember to run the tests before pushing to main.",
}

// TestEncodeAllocs: after the first call, encoding allocates nothing.
func TestEncodeAllocs(t *testing.T) {
	m := testModel(t)
	e := m.NewEncoder()
	v := e.Encode(nil, strings.Repeat("warm up the buffers ", 40))
	long := strings.Repeat("Café naïve 😀 ", 30)
	for _, q := range append(slices.Clone(queries), long) {
		n := testing.AllocsPerRun(5, func() { v = e.Encode(v, q) })
		assert.EqualValues(t, 0, n, "%q: got %v allocations a call, want 0", q, n)
	}
}

func BenchmarkLoad(b *testing.B) {
	testModel(b)
	dir, _ := DefaultDir()
	for b.Loop() {
		_, err := Load(dir)
		require.NoError(b, err)
	}
}

// BenchmarkEncodeQuery reports p50/p99 per query (≤ 32 pieces).
func BenchmarkEncodeQuery(b *testing.B) {
	m := testModel(b)
	e := m.NewEncoder()
	for _, q := range queries {
		n := len(e.Pieces(q))
		require.False(b, n > 32, "%q has %d pieces, want ≤ 32", q, n)
	}
	var v []float32
	lat := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		t0 := time.Now()
		v = e.Encode(v, queries[i%len(queries)])
		lat = append(lat, time.Since(t0))
		i++
	}
	reportLatency(b, lat)
}

// BenchmarkEncodeText: background encoding of memory-sized texts, one
// Encoder (28–31 pieces each; MADial memories are one or two sentences).
func BenchmarkEncodeText(b *testing.B) {
	m := testModel(b)
	e := m.NewEncoder()
	texts := []string{
		"I went to the new ice cream shop downtown with my sister, and we tried the lavender honey flavour, which was surprisingly good.",
		"We decided to use PostgreSQL 16 for the billing service because the team already runs it for the ledger and knows its failure modes.",
		"My grandmother taught me how to bake bread when I was a child; every Sunday we kneaded the dough together in her small kitchen.",
	}
	var v []float32
	n := 0
	for b.Loop() {
		v = e.Encode(v, texts[n%len(texts)])
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "texts/s")
}

// BenchmarkEncodeTextParallel: one Encoder per core, as a background fold
// would run them.
func BenchmarkEncodeTextParallel(b *testing.B) {
	m := testModel(b)
	text := "I went to the new ice cream shop downtown with my sister, and we tried the lavender honey flavour, which was surprisingly good."
	b.RunParallel(func(pb *testing.PB) {
		e := m.NewEncoder()
		var v []float32
		for pb.Next() {
			v = e.Encode(v, text)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "texts/s")
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkScan100k: the exact nearest-neighbour scan recall would run,
// 100,000 unit vectors in memory against one query (dot products only,
// no top-k): the cost per 100k vectors that decides when an ANN index pays.
func BenchmarkScan100k(b *testing.B) {
	const n = 100_000
	vecs := make([]float32, n*Dim)
	for i := range vecs {
		vecs[i] = float32(i%97) / 97
	}
	q := vecs[:Dim]
	var best float32
	for b.Loop() {
		for i := 0; i < n; i++ {
			best = max(best, Dot(q, vecs[i*Dim:(i+1)*Dim]))
		}
	}
	_ = best
}
