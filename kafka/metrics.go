package kafka

import (
	"fmt"
	"sort"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
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
		stats := make([]Stats, 0, len(readers[t]))
		for _, r := range readers[t] {
			stats = append(stats, r.Stats())
			if r.cfg.AlignmentGroup != "" {
				groupOf[r.cfg.AlignmentGroup] = t
			}
		}
		s := combine(stats)
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

// combine makes one source's statistics of its subtasks' readers: one
// transform, one set of gauges. Counts add; the watermark is the least
// over the readers that are not idle (all of them when every one is), as
// the source's consumers take it; the spread is over every partition.
func combine(readers []Stats) Stats {
	if len(readers) == 1 {
		return readers[0]
	}
	var s Stats
	s.Output = mtime.MaxTimestamp
	active := 0
	for _, r := range readers {
		if !r.Idle {
			active++
		}
	}
	low, high := mtime.MaxTimestamp, mtime.MinTimestamp
	for _, r := range readers {
		if !r.Idle || active == 0 {
			s.Output = min(s.Output, r.Output)
		}
		s.Records += r.Records
		s.Late += r.Late
		s.Paused += r.Paused
		s.Partitions = append(s.Partitions, r.Partitions...)
		for _, p := range r.Partitions {
			if !p.Idle && p.Watermark > mtime.MinTimestamp && p.Watermark < mtime.MaxTimestamp {
				low, high = min(low, p.Watermark), max(high, p.Watermark)
			}
		}
	}
	if low < high {
		s.Spread = time.Duration(high-low) * time.Millisecond
	}
	s.Idle = active == 0 && len(readers) > 0
	return s
}
