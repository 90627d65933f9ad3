package bench

import (
	"math"
	"sync/atomic"
	"time"
)

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

// The histogram's buckets: bucket 0 holds latencies under histBase;
// bucket i ≥ 1 holds [histBase·g^(i-1), histBase·g^i) with g =
// histGrowth; the last one also holds everything longer (1 µs·1.01^2047
// is about 700 s, past any request's timeout).
const (
	histBase    = time.Microsecond
	histGrowth  = 1.01
	histBuckets = 2048
)

var histLogGrowth = math.Log(histGrowth)

// histogram counts latencies in log-spaced buckets, so a run of any
// length holds the same 16 KiB, where a slice of samples grows with
// every request. A quantile is read as percentile reads a sorted slice
// (the sample at rank ⌊q·n⌋) but answers its bucket's geometric middle,
// within √1.01 − 1 ≈ 0.5% of the exact sample, clipped to the smallest
// and largest latency seen (the first and last ranks read them exactly). Add is safe from many goroutines.
type histogram struct {
	counts [histBuckets]atomic.Uint64
	n      atomic.Uint64
	lo, hi atomic.Int64 // the smallest and largest latency added (lo is valid once n > 0)
}

// Add counts one latency.
func (h *histogram) Add(d time.Duration) {
	d = max(d, 0)
	h.counts[histBucket(d)].Add(1)
	if h.n.Add(1) == 1 {
		h.lo.Store(int64(d))
	}
	for m := h.hi.Load(); int64(d) > m && !h.hi.CompareAndSwap(m, int64(d)); m = h.hi.Load() {
	}
	for m := h.lo.Load(); int64(d) < m && !h.lo.CompareAndSwap(m, int64(d)); m = h.lo.Load() {
	}
}

// Count is how many latencies were added.
func (h *histogram) Count() int { return int(h.n.Load()) }

// Quantile is the q-th quantile (0 ≤ q ≤ 1) of the latencies added, as
// percentile reads it from a sorted slice, to within 0.5%; 0 when there
// are none. Read it once the adds are done.
func (h *histogram) Quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	lo, hi := time.Duration(h.lo.Load()), time.Duration(h.hi.Load())
	rank := min(n-1, uint64(q*float64(n)))
	switch rank {
	case 0:
		return lo
	case n - 1:
		return hi
	}
	var seen uint64
	for i := range h.counts {
		if seen += h.counts[i].Load(); seen > rank {
			return min(max(histMiddle(i), lo), hi)
		}
	}
	return hi
}

// histBucket is the bucket of d.
func histBucket(d time.Duration) int {
	if d < histBase {
		return 0
	}
	return min(histBuckets-1, 1+int(math.Log(float64(d)/float64(histBase))/histLogGrowth))
}

// histMiddle is the geometric middle of bucket i (for bucket 0, its
// upper bound: the clip to the smallest latency does the rest).
func histMiddle(i int) time.Duration {
	if i == 0 {
		return histBase
	}
	return time.Duration(float64(histBase) * math.Exp((float64(i)-0.5)*histLogGrowth))
}
