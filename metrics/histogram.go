package metrics

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// Histogram counts non-negative int64 observations (durations in
// milliseconds, say) in fixed logarithmic buckets, so a quantile it reports
// is within 1/16 (6.25%) above the true value, and its memory is fixed
// (about 8 KiB) whatever it sees. Observe does not allocate and is safe for
// concurrent use: each bucket is an atomic counter, so subtasks of one
// transform may share a Histogram. The zero value is empty and ready.
type Histogram struct {
	buckets [histBuckets]atomic.Uint64
	count   atomic.Uint64
	sum     atomic.Int64
	max     atomic.Int64
	minInv  atomic.Int64 // MaxInt64 minus the least value: 0 while empty
}

// Values below histLinear each have a bucket of their own; above, each
// power of two is cut into histSub buckets.
const (
	histSubBits = 4
	histSub     = 1 << histSubBits
	histLinear  = histSub
	histBuckets = histLinear + (64-histSubBits)*histSub
)

// bucketOf returns the bucket of v >= 0.
func bucketOf(v int64) int {
	if v < histLinear {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 1 // v's leading bit, >= histSubBits
	sub := int(uint64(v)>>(e-histSubBits)) & (histSub - 1)
	return histLinear + (e-histSubBits)*histSub + sub
}

// bucketUpper returns the largest value of bucket b.
func bucketUpper(b int) int64 {
	if b < histLinear {
		return int64(b)
	}
	e := (b-histLinear)/histSub + histSubBits
	sub := (b - histLinear) % histSub
	lo := uint64(histSub+sub) << (e - histSubBits)
	hi := lo + uint64(1)<<(e-histSubBits) - 1
	if hi > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(hi)
}

// Observe records v; negative values count as 0.
func (h *Histogram) Observe(v int64) {
	v = max(v, 0)
	h.buckets[bucketOf(v)].Add(1)
	h.count.Add(1)
	h.sum.Add(v)
	raise(&h.max, v)
	raise(&h.minInv, math.MaxInt64-v)
}

// raise sets a to v if v is greater.
func raise(a *atomic.Int64, v int64) {
	for {
		m := a.Load()
		if v <= m || a.CompareAndSwap(m, v) {
			return
		}
	}
}

// HistogramSnapshot is a Histogram's content at one moment.
type HistogramSnapshot struct {
	Count         int64
	Sum, Min, Max int64 // Min and Max are 0 while empty
	buckets       [histBuckets]uint64
}

// Snapshot copies the histogram. Observations racing with it may be
// counted in some of its fields and not others.
func (h *Histogram) Snapshot() *HistogramSnapshot {
	s := &HistogramSnapshot{Count: int64(h.count.Load()), Sum: h.sum.Load(), Max: h.max.Load()}
	if s.Count > 0 {
		s.Min = math.MaxInt64 - h.minInv.Load()
	}
	for i := range h.buckets {
		s.buckets[i] = h.buckets[i].Load()
	}
	return s
}

// Quantile returns an upper bound of the q-quantile (0 < q <= 1) of the
// observations, never more than the largest one: the top of the bucket
// that holds the ceil(q*n)-th smallest. It is 0 for an empty histogram.
func (s *HistogramSnapshot) Quantile(q float64) int64 {
	var n uint64
	for _, c := range s.buckets {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	var seen uint64
	for b, c := range s.buckets {
		seen += c
		if seen >= rank {
			return min(bucketUpper(b), s.Max)
		}
	}
	return s.Max
}
