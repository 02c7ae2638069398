package kafka

import (
	"fmt"
	"sort"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/metrics"
)

// Metric names, in the runner's metrics namespace, labelled with the source
// transform. Per-partition names end in /topic/partition.
const (
	MetricsNamespace      = "weir"
	MetricWatermark       = "kafka_watermark_ms"
	MetricPartitionWM     = "kafka_partition_watermark_ms"
	MetricPartitionLag    = "kafka_partition_lag"
	MetricSpread          = "kafka_watermark_spread_ms"
	MetricPaused          = "kafka_paused_partitions"
	MetricRecords         = "kafka_records"
	MetricLate            = "kafka_late_records"
	MetricAlignmentSpread = "kafka_alignment_spread_ms"
	MetricAlignmentBound  = "kafka_alignment_bound_ms"
	MetricAlignmentPaused = "kafka_alignment_paused"
)

// MonitoringInfos reports every reader's statistics and each alignment
// group's last announcement, for the job's metrics (metrics.Store.AddSource).
func (m *Metrics) MonitoringInfos() []*pipepb.MonitoringInfo {
	m.mu.Lock()
	transforms := make([]string, 0, len(m.readers))
	for t := range m.readers {
		transforms = append(transforms, t)
	}
	sort.Strings(transforms)
	readers := make(map[string][]*Reader, len(m.readers))
	for t, rs := range m.readers {
		readers[t] = append([]*Reader(nil), rs...)
	}
	m.mu.Unlock()
	now := time.Now().UnixMilli()
	gauge := func(name, transform string, v int64) *pipepb.MonitoringInfo {
		return metrics.UserGauge(MetricsNamespace, name, transform, now, v)
	}
	var out []*pipepb.MonitoringInfo
	groupOf := map[string]string{}
	for _, t := range transforms {
		for _, r := range readers[t] {
			s := r.Stats()
			if r.cfg.AlignmentGroup != "" {
				groupOf[r.cfg.AlignmentGroup] = t
			}
			out = append(out,
				gauge(MetricWatermark, t, int64(s.Output)),
				gauge(MetricSpread, t, s.Spread.Milliseconds()),
				gauge(MetricPaused, t, int64(s.Paused)),
				metrics.UserCounter(MetricsNamespace, MetricRecords, t, s.Records),
				metrics.UserCounter(MetricsNamespace, MetricLate, t, s.Late))
			for _, p := range s.Partitions {
				suffix := fmt.Sprintf("/%s/%d", p.Topic, p.Partition)
				out = append(out, gauge(MetricPartitionWM+suffix, t, int64(p.Watermark)))
				if p.Lag >= 0 {
					out = append(out, gauge(MetricPartitionLag+suffix, t, p.Lag))
				}
			}
		}
	}
	if m.groups != nil {
		for name, a := range m.groups.Announcements() {
			t, ok := groupOf[name]
			if !ok {
				continue
			}
			// A bound of +inf (MaxTimestamp) means no split holds the group back.
			out = append(out,
				gauge(MetricAlignmentSpread+"/"+name, t, a.Spread().Milliseconds()),
				gauge(MetricAlignmentBound+"/"+name, t, int64(a.Bound)),
				gauge(MetricAlignmentPaused+"/"+name, t, int64(a.Paused)))
		}
	}
	return out
}
