package bench

import "time"

// percentile is the q-th quantile (0 ≤ q ≤ 1) of latencies sorted
// ascending: the sample at rank ⌊q·n⌋, the last one for q = 1; 0 when
// there are none. Every figure of this package is read with it, so p99
// means the same thing in each benchmark.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
