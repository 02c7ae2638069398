package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for _, v := range []int64{0, 1, 15, 16, 17, 31, 32, 33, 1000, 1 << 40, math.MaxInt64} {
		b := bucketOf(v)
		if b < prev {
			t.Errorf("bucketOf(%d) = %d, before %d", v, b, prev)
		}
		if b >= histBuckets {
			t.Fatalf("bucketOf(%d) = %d, past the last bucket", v, b)
		}
		if up := bucketUpper(b); up < v || float64(up-v) > float64(v)/16 {
			t.Errorf("bucketUpper(bucketOf(%d)) = %d: not within 1/16 above", v, up)
		}
		prev = b
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]int64, 100000)
	for i := range vals {
		vals[i] = int64(r.ExpFloat64() * 5000)
		h.Observe(vals[i])
	}
	h.Observe(-5) // counts as 0
	vals = append(vals, 0)
	slices.Sort(vals)
	s := h.Snapshot()
	if s.Count != int64(len(vals)) || s.Min != 0 || s.Max != vals[len(vals)-1] {
		t.Fatalf("count %d min %d max %d, want %d 0 %d", s.Count, s.Min, s.Max, len(vals), vals[len(vals)-1])
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		got := s.Quantile(q)
		if got < exact || float64(got-exact) > float64(exact)/16+1 {
			t.Errorf("p%v = %d, exact %d", q*100, got, exact)
		}
	}
	var empty Histogram
	if q := empty.Snapshot().Quantile(0.5); q != 0 {
		t.Errorf("empty p50 = %d", q)
	}
}

func TestHistogramObserveDoesNotAllocate(t *testing.T) {
	var h Histogram
	if n := testing.AllocsPerRun(100, func() { h.Observe(12345) }); n != 0 {
		t.Errorf("Observe allocates %v times", n)
	}
}
