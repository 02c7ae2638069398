package metrics

import (
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Builders of the user-metric MonitoringInfos the runner reports for
// itself. They use Beam's user-metric URNs and labels, so SDK job clients
// (beam.PipelineResult.Metrics in Go) show them like a DoFn's own metrics,
// under the namespace the caller gives (weir uses "weir").

const (
	urnUserSumInt64    = "beam:metric:user:sum_int64:v1"
	urnUserDistInt64   = "beam:metric:user:distribution_int64:v1"
	urnUserLatestInt64 = "beam:metric:user:latest_int64:v1"
)

func userLabels(namespace, name, transform string) map[string]string {
	return map[string]string{"NAMESPACE": namespace, "NAME": name, "PTRANSFORM": transform}
}

// UserCounter returns a counter (sum_int64) of transform.
func UserCounter(namespace, name, transform string, v int64) *pipepb.MonitoringInfo {
	return &pipepb.MonitoringInfo{Urn: urnUserSumInt64, Type: typeSumInt64,
		Labels: userLabels(namespace, name, transform), Payload: appendVarint(nil, v)}
}

// UserGauge returns a gauge (latest_int64) of transform, set at tsMillis
// (milliseconds since the epoch).
func UserGauge(namespace, name, transform string, tsMillis, v int64) *pipepb.MonitoringInfo {
	return &pipepb.MonitoringInfo{Urn: urnUserLatestInt64, Type: typeLatestInt64,
		Labels: userLabels(namespace, name, transform), Payload: (&latestInt64{ts: tsMillis, v: v}).payload()}
}

// UserDistribution returns a distribution (distribution_int64) of
// transform; count 0 is an empty one.
func UserDistribution(namespace, name, transform string, count, sum, minV, maxV int64) *pipepb.MonitoringInfo {
	return &pipepb.MonitoringInfo{Urn: urnUserDistInt64, Type: typeDistributionInt64,
		Labels: userLabels(namespace, name, transform), Payload: (&distInt64{count: count, sum: sum, min: minV, max: maxV}).payload()}
}

// UserInt64 reads back the value of a counter (sum_int64) or gauge
// (latest_int64) such as UserCounter and UserGauge build, for clients that
// show the runner's own metrics (weir checkpoints). ok is false for any
// other type or a payload that does not decode.
func UserInt64(mi *pipepb.MonitoringInfo) (v int64, ok bool) {
	r := reader{buf: mi.GetPayload()}
	switch mi.GetType() {
	case typeSumInt64:
	case typeLatestInt64:
		if _, err := r.varint(); err != nil { // the timestamp
			return 0, false
		}
	default:
		return 0, false
	}
	v, err := r.varint()
	if err != nil || r.done() != nil {
		return 0, false
	}
	return v, true
}
