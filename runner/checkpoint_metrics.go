package runner

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/metrics"
)

// Checkpoint statistics travel as job metrics (GetJobMetrics), not as a
// weir-specific RPC: Beam's JobService has no call for them, and metrics
// need no new protocol, reach every client that reads job metrics, and
// are what Prometheus will export. They are user metrics of the namespace
// CheckpointMetricsNamespace: the totals under the transform "checkpoints"
// (completed, failed, in_progress), and one gauge per figure of each
// checkpoint the coordinator keeps in its history (the last ten) under
// "chk-<id>", so the metrics stay bounded however long a job runs.

// CheckpointMetricsNamespace is the user-metric namespace of checkpoint
// statistics in job metrics.
const CheckpointMetricsNamespace = "weir.checkpoints"

const checkpointTotals = "checkpoints"

// The per-checkpoint gauges.
const (
	gaugeStatus     = "status"
	gaugeTrigger    = "trigger_unix_ms"
	gaugeDuration   = "duration_ms"
	gaugeBytes      = "bytes"
	gaugeInFlight   = "in_flight_bytes"
	gaugeStartDelay = "start_delay_max_ms"
	gaugeAlignment  = "alignment_max_ms"
	gaugeSync       = "sync_max_ms"
	gaugeAsync      = "async_max_ms"
	gaugeUnaligned  = "unaligned_subtasks"
	gaugeSubtasks   = "subtasks"
)

// monitoringInfos reports the job's checkpoint statistics; it is a
// metrics.Source.
func (c *jobCheckpoints) monitoringInfos() []*pipepb.MonitoringInfo {
	hist, pending, completed, failed := c.driver.Stats()
	return checkpointInfos(hist, pending != nil, completed, failed)
}

func checkpointInfos(hist []checkpoint.Stats, inProgress bool, completed, failed int) []*pipepb.MonitoringInfo {
	ns := CheckpointMetricsNamespace
	busy := int64(0)
	if inProgress {
		busy = 1
	}
	out := []*pipepb.MonitoringInfo{
		metrics.UserCounter(ns, "completed", checkpointTotals, int64(completed)),
		metrics.UserCounter(ns, "failed", checkpointTotals, int64(failed)),
		metrics.UserCounter(ns, "in_progress", checkpointTotals, busy),
	}
	for _, st := range hist {
		sum := st.Summary()
		ts := st.Trigger.UnixMilli()
		tr := fmt.Sprintf("chk-%d", st.ID)
		for _, g := range []struct {
			name string
			v    int64
		}{
			{gaugeStatus, int64(st.Status)}, {gaugeTrigger, ts},
			{gaugeDuration, st.Duration(time.Time{}).Milliseconds()},
			{gaugeBytes, sum.Bytes}, {gaugeInFlight, sum.InFlightBytes},
			{gaugeStartDelay, sum.MaxStartDelay.Milliseconds()}, {gaugeAlignment, sum.MaxAlignment.Milliseconds()},
			{gaugeSync, sum.MaxSync.Milliseconds()}, {gaugeAsync, sum.MaxAsync.Milliseconds()},
			{gaugeUnaligned, int64(sum.UnalignedSubtasks)}, {gaugeSubtasks, int64(sum.AckedSubtasks)},
		} {
			out = append(out, metrics.UserGauge(ns, g.name, tr, ts, g.v))
		}
	}
	return out
}

// CheckpointReport is what a job's metrics say of its checkpoints.
type CheckpointReport struct {
	Completed, Failed, InProgress int64
	// Checkpoints are the last ones finished, newest first.
	Checkpoints []CheckpointRow
}

// CheckpointRow describes one finished checkpoint.
type CheckpointRow struct {
	ID                                        uint64
	Status                                    checkpoint.Status
	Trigger                                   time.Time
	Duration, MaxStartDelay, MaxAlignment     time.Duration
	MaxSync, MaxAsync                         time.Duration
	Bytes, InFlightBytes, Unaligned, Subtasks int64
}

// ReadCheckpointMetrics picks the checkpoint statistics out of a job's
// metrics (GetJobMetrics' committed results).
func ReadCheckpointMetrics(infos []*pipepb.MonitoringInfo) CheckpointReport {
	var r CheckpointReport
	rows := map[uint64]*CheckpointRow{}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	for _, mi := range infos {
		l := mi.GetLabels()
		if l["NAMESPACE"] != CheckpointMetricsNamespace {
			continue
		}
		v, ok := metrics.UserInt64(mi)
		if !ok {
			continue
		}
		tr, name := l["PTRANSFORM"], l["NAME"]
		if tr == checkpointTotals {
			switch name {
			case "completed":
				r.Completed = v
			case "failed":
				r.Failed = v
			case "in_progress":
				r.InProgress = v
			}
			continue
		}
		id, err := strconv.ParseUint(strings.TrimPrefix(tr, "chk-"), 10, 64)
		if err != nil || !strings.HasPrefix(tr, "chk-") {
			continue
		}
		row := rows[id]
		if row == nil {
			row = &CheckpointRow{ID: id}
			rows[id] = row
		}
		switch name {
		case gaugeStatus:
			row.Status = checkpoint.Status(v)
		case gaugeTrigger:
			row.Trigger = time.UnixMilli(v)
		case gaugeDuration:
			row.Duration = ms(v)
		case gaugeBytes:
			row.Bytes = v
		case gaugeInFlight:
			row.InFlightBytes = v
		case gaugeStartDelay:
			row.MaxStartDelay = ms(v)
		case gaugeAlignment:
			row.MaxAlignment = ms(v)
		case gaugeSync:
			row.MaxSync = ms(v)
		case gaugeAsync:
			row.MaxAsync = ms(v)
		case gaugeUnaligned:
			row.Unaligned = v
		case gaugeSubtasks:
			row.Subtasks = v
		}
	}
	for _, row := range rows {
		r.Checkpoints = append(r.Checkpoints, *row)
	}
	slices.SortFunc(r.Checkpoints, func(a, b CheckpointRow) int { return cmp.Compare(b.ID, a.ID) })
	return r
}
