package metrics

import (
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// TestUserValuesDecodesCommittedUserMetrics checks each kind decodes, that
// only committed bundles count, and that the runner's sources and the
// SDK's system metrics stay out.
func TestUserValuesDecodesCommittedUserMetrics(t *testing.T) {
	s := NewStore()
	s.Commit([]*pipepb.MonitoringInfo{
		UserCounter("ns", "c", "t1", 2),
		UserDistribution("ns", "d", "t1", 2, 10, 3, 7),
		UserGauge("ns", "g", "t0", 5, 9),
		{Urn: "beam:metric:element_count:v1", Type: typeSumInt64, Labels: map[string]string{"PCOLLECTION": "p"}, Payload: appendVarint(nil, 4)},
	})
	s.Commit([]*pipepb.MonitoringInfo{UserCounter("ns", "c", "t1", 3)})
	s.Attempt([]*pipepb.MonitoringInfo{UserCounter("ns", "c", "t1", 100)}) // a failed attempt
	s.AddSource(func() []*pipepb.MonitoringInfo { return []*pipepb.MonitoringInfo{UserCounter("weir", "x", "t1", 1)} })
	got := s.UserValues()
	want := []UserValue{
		{Namespace: "ns", Name: "g", Transform: "t0", Kind: "gauge", Value: 9},
		{Namespace: "ns", Name: "c", Transform: "t1", Kind: "counter", Value: 5},
		{Namespace: "ns", Name: "d", Transform: "t1", Kind: "distribution", Count: 2, Sum: 10, Min: 3, Max: 7},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
