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

func TestUserInt64ReadsBack(t *testing.T) {
	if v, ok := UserInt64(UserCounter("weir", "n", "t", 42)); !ok || v != 42 {
		t.Errorf("counter read back as %d, %v", v, ok)
	}
	if v, ok := UserInt64(UserGauge("weir", "n", "t", 1000, -7)); !ok || v != -7 {
		t.Errorf("gauge read back as %d, %v", v, ok)
	}
	if _, ok := UserInt64(UserDistribution("weir", "n", "t", 1, 2, 2, 2)); ok {
		t.Error("a distribution read as an int64")
	}
}
