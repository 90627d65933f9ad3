package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPercentile: the sample at rank ⌊q·n⌋, clipped to the last; the
// remember bench's windows, read before as s[n/2] and s[n·99/100], give
// the same sample for every n.
func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i
	}
	for _, tc := range []struct {
		name string
		lats []time.Duration
		q    float64
		want time.Duration
	}{
		{"Empty", nil, 0.5, 0},
		{"One", ms(7), 0.99, 7 * time.Millisecond},
		{"P50OfTwo", ms(1, 2), 0.5, 2 * time.Millisecond},
		{"P50OfThree", ms(1, 2, 3), 0.5, 2 * time.Millisecond},
		{"P99OfHundred", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"Max", ms(1, 2, 3), 1, 3 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, percentile(tc.lats, tc.q))
		})
	}
	t.Run("IntegerRanks", func(t *testing.T) {
		for n := 1; n <= 20_000; n++ {
			s := make([]time.Duration, n)
			for i := range s {
				s[i] = time.Duration(i)
			}
			if !assert.Equal(t, s[n/2], percentile(s, 0.50), "p50 of %d", n) ||
				!assert.Equal(t, s[min(n-1, n*99/100)], percentile(s, 0.99), "p99 of %d", n) {
				return
			}
		}
	})
}

// TestHistogram: over latencies spread from 20 µs to 20 s, every
// quantile the benches print reads within 0.5% of the exact sample
// percentile picks from the sorted slice (the bucket's middle is at most
// √1.01 − 1 from any latency in it); the largest is exact; an empty
// histogram reads 0.
func TestHistogram(t *testing.T) {
	var empty histogram
	assert.Zero(t, empty.Quantile(0.99))
	assert.Zero(t, empty.Count())
	rng := rand.New(rand.NewPCG(1, 2))
	var h histogram
	lats := make([]time.Duration, 100_000)
	for i := range lats {
		lats[i] = time.Duration(20e3 * math.Exp(rng.Float64()*math.Log(1e6))) // 20 µs · 1e6^u
		h.Add(lats[i])
	}
	slices.Sort(lats)
	assert.Equal(t, len(lats), h.Count())
	for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.95, 0.99, 0.999} {
		exact, got := percentile(lats, q), h.Quantile(q)
		assert.InDelta(t, 1, float64(got)/float64(exact), 0.0051, "q %v: got %v, want %v", q, got, exact)
	}
	assert.Equal(t, lats[len(lats)-1], h.Quantile(1), "the largest latency")
	assert.Equal(t, lats[0], h.Quantile(0), "the smallest latency")
	var one histogram
	one.Add(7 * time.Millisecond)
	assert.Equal(t, 7*time.Millisecond, one.Quantile(0.5), "one latency reads exactly")
}
