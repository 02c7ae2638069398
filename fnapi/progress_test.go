package fnapi

import (
	"encoding/binary"
	"math"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

func TestDescribeProgress(t *testing.T) {
	progress := binary.BigEndian.AppendUint32(nil, 1)
	progress = binary.BigEndian.AppendUint64(progress, math.Float64bits(12.5))
	tests := []struct {
		name  string
		infos []*pipepb.MonitoringInfo
		want  string
	}{
		{"none", nil, "the SDK reported no progress"},
		{"unrelated metrics only", []*pipepb.MonitoringInfo{{Urn: "beam:metric:user:sum_int64:v1", Type: typeSumInt64, Payload: []byte{5}}},
			"the SDK reported no progress"},
		{"counts and work", []*pipepb.MonitoringInfo{
			{Urn: "beam:metric:ptransform_progress:completed:v1", Type: typeProgress, Payload: progress,
				Labels: map[string]string{"PTRANSFORM": "sdf"}},
			{Urn: "beam:metric:element_count:v1", Type: typeSumInt64, Payload: binary.AppendUvarint(nil, 300),
				Labels: map[string]string{"PCOLLECTION": "out"}},
		}, "element_count[out]=300 ptransform_progress:completed[sdf]=12.5"},
	}
	for _, tt := range tests {
		if got := DescribeProgress(tt.infos); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
