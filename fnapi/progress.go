package fnapi

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Progress asks an in-flight bundle how far it has got.
func (w *Worker) Progress(ctx context.Context, instruction string) (*fnpb.ProcessBundleProgressResponse, error) {
	respc, err := w.instruct(&fnpb.InstructionRequest{InstructionId: w.newInstructionID(),
		Request: &fnpb.InstructionRequest_ProcessBundleProgress{ProcessBundleProgress: &fnpb.ProcessBundleProgressRequest{
			InstructionId: instruction}}})
	if err != nil {
		return nil, err
	}
	select {
	case resp := <-respc:
		if msg := resp.GetError(); msg != "" {
			return nil, fmt.Errorf("fnapi: progress of bundle %s: %s", instruction, msg)
		}
		return resp.GetProcessBundleProgress(), nil
	case <-w.done:
		return nil, w.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Metric types of progress reports.
const (
	typeSumInt64 = "beam:metrics:sum_int64:v1"
	typeProgress = "beam:metrics:progress:v1"
)

// DescribeProgress summarizes what a progress report says of the bundle's
// work: element counts, read positions and the SDK's completed and
// remaining work per transform, one "name[transform]=value" per metric.
func DescribeProgress(infos []*pipepb.MonitoringInfo) string {
	var parts []string
	for _, mi := range infos {
		urn := mi.GetUrn()
		if !strings.Contains(urn, "progress") && !strings.Contains(urn, "element_count") && !strings.Contains(urn, "read_index") {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(urn, "beam:metric:"), ":v1")
		where := mi.GetLabels()["PTRANSFORM"]
		if where == "" {
			where = mi.GetLabels()["PCOLLECTION"]
		}
		parts = append(parts, fmt.Sprintf("%s[%s]=%s", name, where, metricValue(mi)))
	}
	if len(parts) == 0 {
		return "the SDK reported no progress"
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func metricValue(mi *pipepb.MonitoringInfo) string {
	b := mi.GetPayload()
	switch mi.GetType() {
	case typeSumInt64:
		// Beam's varint of an int64: its two's complement, unsigned.
		if v, n := binary.Uvarint(b); n > 0 {
			return fmt.Sprint(int64(v))
		}
	case typeProgress:
		if len(b) >= 4 {
			n := int(binary.BigEndian.Uint32(b))
			var vs []string
			for i := 0; i < n && len(b) >= 4+8*(i+1); i++ {
				vs = append(vs, fmt.Sprintf("%g", math.Float64frombits(binary.BigEndian.Uint64(b[4+8*i:]))))
			}
			return strings.Join(vs, ",")
		}
	}
	return fmt.Sprintf("%d bytes", len(b))
}
