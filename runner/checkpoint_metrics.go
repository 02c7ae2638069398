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
// "chk-<id>", so the metrics stay bounded however long a job runs. The
// newest finished checkpoint that subtasks acknowledged also has one
// gauge per figure of each subtask, under "chk-<id>/<stage>[<subtask>]": a subtask's row is what
// tells which stage holds a checkpoint back.

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

// The per-subtask gauges of the newest checkpoint.
const (
	gaugeSubStartDelay = "start_delay_ms"
	gaugeSubAlignment  = "alignment_ms"
	gaugeSubSync       = "sync_ms"
	gaugeSubAsync      = "async_ms"
	gaugeSubBytes      = "bytes"
	gaugeSubInFlight   = "in_flight_bytes"
	gaugeSubUnaligned  = "unaligned"
)

// monitoringInfos reports the job's checkpoint statistics; it is a
// metrics.Source.
func (c *jobCheckpoints) monitoringInfos() []*pipepb.MonitoringInfo {
	hist, pending, completed, failed := c.driver.Stats()
	return checkpointInfos(hist, pending != nil, completed, failed, func(node int) string {
		if node < 0 || node >= len(c.graph.Nodes) {
			return fmt.Sprintf("node %d", node)
		}
		return c.graph.Nodes[node].Name
	})
}

func checkpointInfos(hist []checkpoint.Stats, inProgress bool, completed, failed int, stage func(node int) string) []*pipepb.MonitoringInfo {
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
	// The newest with acknowledgements: a checkpoint the job's end cut
	// short may have none.
	for i := len(hist) - 1; i >= 0; i-- {
		if len(hist[i].Subtasks) > 0 {
			out = append(out, subtaskInfos(hist[i], stage)...)
			break
		}
	}
	return out
}

// subtaskInfos reports each subtask's part of checkpoint st.
func subtaskInfos(st checkpoint.Stats, stage func(node int) string) []*pipepb.MonitoringInfo {
	var out []*pipepb.MonitoringInfo
	ts := st.Trigger.UnixMilli()
	for _, s := range st.Subtasks {
		tr := fmt.Sprintf("chk-%d/%s[%d]", st.ID, stage(s.Task.Node), s.Task.Subtask)
		unaligned := int64(0)
		if s.Unaligned {
			unaligned = 1
		}
		for _, g := range []struct {
			name string
			v    int64
		}{
			{gaugeSubStartDelay, s.StartDelay.Milliseconds()}, {gaugeSubAlignment, s.Alignment.Milliseconds()},
			{gaugeSubSync, s.Sync.Milliseconds()}, {gaugeSubAsync, s.Async.Milliseconds()},
			{gaugeSubBytes, s.Bytes}, {gaugeSubInFlight, s.InFlightBytes}, {gaugeSubUnaligned, unaligned},
		} {
			out = append(out, metrics.UserGauge(CheckpointMetricsNamespace, g.name, tr, ts, g.v))
		}
	}
	return out
}

// CheckpointReport is what a job's metrics say of its checkpoints.
type CheckpointReport struct {
	Completed, Failed, InProgress int64
	// Checkpoints are the last ones finished, newest first.
	Checkpoints []CheckpointRow
	// Subtasks are the subtasks' parts of the newest finished checkpoint
	// that subtasks acknowledged, by stage and subtask.
	Subtasks []SubtaskRow
}

// SubtaskRow is one subtask's part of a checkpoint.
type SubtaskRow struct {
	Checkpoint            uint64
	Stage                 string
	Subtask               int
	StartDelay, Alignment time.Duration
	Sync, Async           time.Duration
	Bytes, InFlightBytes  int64
	Unaligned             bool
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
	subs := map[string]*SubtaskRow{}
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
		if chk, sub, ok := strings.Cut(tr, "/"); ok {
			readSubtaskGauge(subs, chk, sub, name, v)
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
	for _, s := range subs {
		r.Subtasks = append(r.Subtasks, *s)
	}
	slices.SortFunc(r.Subtasks, func(a, b SubtaskRow) int {
		return cmp.Or(cmp.Compare(b.Checkpoint, a.Checkpoint), cmp.Compare(a.Stage, b.Stage), cmp.Compare(a.Subtask, b.Subtask))
	})
	return r
}

// readSubtaskGauge reads one per-subtask gauge, whose transform label is
// chk-<id>/<stage>[<subtask>], into its row.
func readSubtaskGauge(subs map[string]*SubtaskRow, chk, sub, name string, v int64) {
	id, err := strconv.ParseUint(strings.TrimPrefix(chk, "chk-"), 10, 64)
	open := strings.LastIndexByte(sub, '[')
	if err != nil || open < 0 || !strings.HasSuffix(sub, "]") {
		return
	}
	index, err := strconv.Atoi(sub[open+1 : len(sub)-1])
	if err != nil {
		return
	}
	key := chk + "/" + sub
	row := subs[key]
	if row == nil {
		row = &SubtaskRow{Checkpoint: id, Stage: sub[:open], Subtask: index}
		subs[key] = row
	}
	ms := time.Duration(v) * time.Millisecond
	switch name {
	case gaugeSubStartDelay:
		row.StartDelay = ms
	case gaugeSubAlignment:
		row.Alignment = ms
	case gaugeSubSync:
		row.Sync = ms
	case gaugeSubAsync:
		row.Async = ms
	case gaugeSubBytes:
		row.Bytes = v
	case gaugeSubInFlight:
		row.InFlightBytes = v
	case gaugeSubUnaligned:
		row.Unaligned = v != 0
	}
}
