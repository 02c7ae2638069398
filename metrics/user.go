package metrics

import (
	"cmp"
	"slices"
	"strings"
)

// UserValue is one user metric's committed value, decoded: what a
// dashboard shows of a pipeline's own counters, distributions and gauges.
type UserValue struct {
	Namespace, Name, Transform string
	// Kind is "counter", "distribution" or "gauge".
	Kind string
	// Value is a counter's sum or a gauge's latest value; a distribution
	// has Count, Sum, Min and Max.
	Value         float64
	Count         int64
	Sum, Min, Max float64
}

// UserValues returns the committed user metrics the SDKs reported (not the
// runner's Sources, which report their own figures), ordered by transform,
// namespace and name. Types a dashboard cannot show as a number (string
// sets, top-n, opaque payloads) are left out.
func (s *Store) UserValues() []UserValue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []UserValue
	for _, e := range s.committed {
		if !strings.HasPrefix(e.urn, "beam:metric:user:") {
			continue
		}
		v := UserValue{Namespace: e.labels["NAMESPACE"], Name: e.labels["NAME"], Transform: e.labels["PTRANSFORM"]}
		switch a := e.agg.(type) {
		case *sumInt64:
			v.Kind, v.Value = "counter", float64(a.v)
		case *sumDouble:
			v.Kind, v.Value = "counter", a.v
		case *distInt64:
			v.Kind, v.Count, v.Sum, v.Min, v.Max = "distribution", a.count, float64(a.sum), float64(a.min), float64(a.max)
		case *distDouble:
			v.Kind, v.Count, v.Sum, v.Min, v.Max = "distribution", a.count, a.sum, a.min, a.max
		case *latestInt64:
			v.Kind, v.Value = "gauge", float64(a.v)
		case *latestDouble:
			v.Kind, v.Value = "gauge", a.v
		default:
			continue
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b UserValue) int {
		return cmp.Or(cmp.Compare(a.Transform, b.Transform), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
	return out
}
