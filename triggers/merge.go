package triggers

import (
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// Interval is an interval window [Start, End).
type Interval struct {
	Start, End mtime.Time
}

// MaxTimestamp is the last instant inside the window.
func (w Interval) MaxTimestamp() mtime.Time { return w.End - 1 }

// Intersects reports whether two windows share an instant. Windows that
// only touch ([0,10) and [10,20)) do not: Beam's sessions keep them apart.
func (w Interval) Intersects(o Interval) bool { return w.Start < o.End && o.Start < w.End }

// Span is the smallest window covering both.
func (w Interval) Span(o Interval) Interval {
	return Interval{Start: min(w.Start, o.Start), End: max(w.End, o.End)}
}

// Merged is one window that results from merging, and the indexes of the
// input windows it covers, in ascending order.
type Merged struct {
	Window  Interval
	Members []int
}

// MergeSessions merges windows the way Beam's session windows do: any two
// that intersect, directly or through a chain of others, become their span.
// The result is ordered by start; each input index appears in exactly one
// result. The order windows arrived in does not matter.
func MergeSessions(ws []Interval) []Merged {
	idx := make([]int, len(ws))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		wa, wb := ws[idx[a]], ws[idx[b]]
		if wa.Start != wb.Start {
			return wa.Start < wb.Start
		}
		return wa.End < wb.End
	})
	var out []Merged
	for _, i := range idx {
		if n := len(out); n > 0 && out[n-1].Window.Intersects(ws[i]) {
			out[n-1].Window = out[n-1].Window.Span(ws[i])
			out[n-1].Members = append(out[n-1].Members, i)
			continue
		}
		out = append(out, Merged{Window: ws[i], Members: []int{i}})
	}
	for k := range out {
		sort.Ints(out[k].Members)
	}
	return out
}
