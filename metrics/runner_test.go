package metrics

import (
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

func TestSourceMergesIntoResultsWithoutStoring(t *testing.T) {
	s := NewStore()
	s.Commit([]*pipepb.MonitoringInfo{UserCounter("weir", "dropped", "gbk", 2)})
	n := int64(3)
	s.AddSource(func() []*pipepb.MonitoringInfo {
		return []*pipepb.MonitoringInfo{UserCounter("weir", "dropped", "gbk", n), UserGauge("weir", "p50", "gbk", 10, n)}
	})
	for _, want := range []int64{5, 6} {
		r := s.Results()
		for _, list := range [][]*pipepb.MonitoringInfo{r.GetCommitted(), r.GetAttempted()} {
			if len(list) != 2 {
				t.Fatalf("%d results, want 2", len(list))
			}
			for _, mi := range list {
				got, err := decode(mi.GetType(), mi.GetPayload())
				if err != nil {
					t.Fatal(err)
				}
				switch a := got.(type) {
				case *sumInt64:
					if a.v != want {
						t.Errorf("counter %d, want %d", a.v, want)
					}
				case *latestInt64:
					if a.v != n {
						t.Errorf("gauge %d, want %d", a.v, n)
					}
				}
			}
		}
		n = 4 // a source reports totals: the store must not have kept the last ones
	}
}
