package metrics

import (
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

func TestDescribe(t *testing.T) {
	mi := func(typ string, payload []byte) *pipepb.MonitoringInfo {
		return &pipepb.MonitoringInfo{Urn: "beam:metric:user:x:v1", Type: typ, Payload: payload}
	}
	dd := appendVarint(nil, 4)
	for _, v := range []float64{10, 0.5, 6} {
		dd = appendDouble(dd, v)
	}
	tests := []struct {
		name        string
		mi          *pipepb.MonitoringInfo
		kind, value string
		err         bool
	}{
		{"counter", UserCounter("ns", "n", "t", 42), "counter", "42", false},
		{"negative counter", UserCounter("ns", "n", "t", -3), "counter", "-3", false},
		{"double counter", mi(typeSumDouble, appendDouble(nil, 2.25)), "counter", "2.25", false},
		{"distribution", UserDistribution("ns", "n", "t", 3, 10, 1, 5), "distribution", "count=3 sum=10 min=1 max=5 mean=3.3333333333333335", false},
		{"empty distribution", mi(typeDistributionInt64, appendVarint(nil, 0)), "distribution", "count=0", false},
		{"double distribution", mi(typeDistributionFloat, dd), "distribution", "count=4 sum=10 min=0.5 max=6 mean=2.5", false},
		{"empty double distribution", mi(typeDistributionFloat, appendVarint(nil, 0)), "distribution", "count=0", false},
		{"gauge", UserGauge("ns", "n", "t", 1_700_000_000_000, 7), "gauge", "7", false},
		{"double gauge", mi(typeLatestDouble, appendDouble(appendVarint(nil, 5), -1.5)), "gauge", "-1.5", false},
		{"set", mi(typeSetString, appendStrings(nil, []string{"b", "a", "b"})), "set", `{"a", "b"}`, false},
		{"other type", mi("beam:metrics:top_n_int64:v1", []byte{1, 2, 3}), "beam:metrics:top_n_int64:v1", "3 bytes", false},
		{"type from the urn", &pipepb.MonitoringInfo{Urn: "beam:metric:element_count:v1", Payload: appendVarint(nil, 9)}, "counter", "9", false},
		{"truncated", mi(typeSumDouble, []byte{1, 2}), "", "", true},
		{"trailing bytes", mi(typeSumInt64, []byte{1, 2}), "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, value, err := Describe(tt.mi)
			if (err != nil) != tt.err {
				t.Fatalf("error %v, want error %v", err, tt.err)
			}
			if tt.err {
				return
			}
			if kind != tt.kind || value != tt.value {
				t.Errorf("Describe = %q, %q; want %q, %q", kind, value, tt.kind, tt.value)
			}
		})
	}
}
