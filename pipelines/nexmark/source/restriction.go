package source

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
)

// Restriction is a block of generators [GenLo, GenHi) and a range of rows
// [Start, End): the events n in [Start, End) of each generator i in the
// block (those it has: the last generator may have more rows than the
// others). WallBase is when, in Unix milliseconds, a rate-limited stream
// started this restriction's clock, 0 until then; splits keep it.
type Restriction struct {
	GenLo, GenHi int
	Start, End   int64
	WallBase     int64
}

// Events is how many events r holds at most.
func (r Restriction) Events() int64 { return (r.End - r.Start) * int64(r.GenHi-r.GenLo) }

// tracker claims rows of a Restriction. Rows split as offsets do, so it
// leaves the work to offsetrange's tracker and keeps the generator block
// and wall clock base on both sides of every split.
type tracker struct {
	inner    *offsetrange.Tracker
	lo, hi   int
	wallBase int64
}

var _ sdf.RTracker = (*tracker)(nil)

func newTracker(r Restriction) *tracker {
	return &tracker{inner: offsetrange.NewTracker(offsetrange.Restriction{Start: r.Start, End: r.End}),
		lo: r.GenLo, hi: r.GenHi, wallBase: r.WallBase}
}

func (t *tracker) wrap(r offsetrange.Restriction) Restriction {
	return Restriction{GenLo: t.lo, GenHi: t.hi, Start: r.Start, End: r.End, WallBase: t.wallBase}
}

// TryClaim claims a row (an int64).
func (t *tracker) TryClaim(row any) bool { return t.inner.TryClaim(row) }
func (t *tracker) GetError() error       { return t.inner.GetError() }
func (t *tracker) IsDone() bool          { return t.inner.IsDone() }
func (t *tracker) IsBounded() bool       { return t.inner.IsBounded() }

// GetProgress counts rows; every row of a block holds about as many
// events.
func (t *tracker) GetProgress() (done, remaining float64) { return t.inner.GetProgress() }

func (t *tracker) GetRestriction() any {
	return t.wrap(t.inner.GetRestriction().(offsetrange.Restriction))
}

func (t *tracker) TrySplit(fraction float64) (primary, residual any, err error) {
	p, r, err := t.inner.TrySplit(fraction)
	if err != nil {
		return nil, nil, err
	}
	if r == nil {
		return t.wrap(p.(offsetrange.Restriction)), nil, nil
	}
	return t.wrap(p.(offsetrange.Restriction)), t.wrap(r.(offsetrange.Restriction)), nil
}

// splitBlocks divides rest's generators into at most n contiguous blocks,
// as even as they divide, each with rest's rows up to the most any of its
// generators has (rows counts each generator's events).
func splitBlocks(rest Restriction, n int, rows func(gen int) int64) []Restriction {
	gens := rest.GenHi - rest.GenLo
	if n <= 0 || n > gens {
		n = gens
	}
	out := make([]Restriction, 0, n)
	lo := rest.GenLo
	for k := range n {
		hi := lo + gens/n
		if k < gens%n {
			hi++
		}
		end := int64(0)
		for i := lo; i < hi; i++ {
			end = max(end, rows(i))
		}
		out = append(out, Restriction{GenLo: lo, GenHi: hi, Start: rest.Start, End: min(rest.End, end), WallBase: rest.WallBase})
		lo = hi
	}
	return out
}
