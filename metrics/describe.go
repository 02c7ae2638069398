package metrics

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Describe decodes a MonitoringInfo's payload for a person to read, as
// weir metrics prints it: its kind (counter, distribution, gauge, set, or
// the type URN of any other type) and its value as text. A MonitoringInfo
// without a type takes its URN's, as in a Store. The error is a payload
// that does not decode as its type requires.
func Describe(mi *pipepb.MonitoringInfo) (kind, value string, err error) {
	typ := mi.GetType()
	if typ == "" {
		typ = urnTypes[mi.GetUrn()]
	}
	agg, err := decode(typ, mi.GetPayload())
	if err != nil {
		return typ, "", fmt.Errorf("metric %s: %s payload: %w", mi.GetUrn(), typ, err)
	}
	switch a := agg.(type) {
	case *sumInt64:
		return "counter", strconv.FormatInt(a.v, 10), nil
	case *sumDouble:
		return "counter", fmtFloat(a.v), nil
	case *distInt64:
		if a.count == 0 {
			return "distribution", "count=0", nil
		}
		return "distribution", fmt.Sprintf("count=%d sum=%d min=%d max=%d mean=%s", a.count, a.sum, a.min, a.max,
			fmtFloat(float64(a.sum)/float64(a.count))), nil
	case *distDouble:
		if a.count == 0 {
			return "distribution", "count=0", nil
		}
		return "distribution", fmt.Sprintf("count=%d sum=%s min=%s max=%s mean=%s", a.count, fmtFloat(a.sum),
			fmtFloat(a.min), fmtFloat(a.max), fmtFloat(a.sum/float64(a.count))), nil
	case *latestInt64:
		return "gauge", strconv.FormatInt(a.v, 10), nil
	case *latestDouble:
		return "gauge", fmtFloat(a.v), nil
	case *stringSet:
		ss := make([]string, 0, len(a.set))
		for s := range a.set {
			ss = append(ss, strconv.Quote(s))
		}
		slices.Sort(ss)
		return "set", "{" + strings.Join(ss, ", ") + "}", nil
	case *opaque:
		if typ == "" {
			typ = "unknown"
		}
		return typ, fmt.Sprintf("%d bytes", len(a.p)), nil
	}
	return typ, "", fmt.Errorf("metric %s: type %s has no description", mi.GetUrn(), typ)
}

// fmtFloat is the shortest text that reads back as v.
func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
