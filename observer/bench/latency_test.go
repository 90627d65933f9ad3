package bench

import (
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
