package runner

import (
	"time"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/jobview"
)

// stageOfTransform returns the executor node name of the stage whose first
// transform is id, or id itself.
func (o *observer) stageOfTransform(id string) string {
	for i, s := range o.plan.Stages {
		if len(s.Transforms) > 0 && s.Transforms[0] == id && i < len(o.g.Nodes) {
			return o.g.Nodes[i].Name
		}
	}
	return id
}

// splitView reads the sources' splits (Kafka partitions) and alignment
// groups from what their connectors report (Job.splits).
func (o *observer) splitView(now time.Time) ([]jobview.Partition, []jobview.Alignment) {
	rs := o.j.splits.Load()
	if rs == nil {
		return nil, nil
	}
	var parts []jobview.Partition
	var groups []jobview.Alignment
	for _, r := range *rs {
		for _, p := range r.Splits(now) {
			p.Source = o.stageOfTransform(p.Source)
			parts = append(parts, p)
		}
		groups = append(groups, r.Alignments()...)
	}
	return parts, groups
}

// checkpointView reads the coordinator's statistics, newest first.
func (o *observer) checkpointView(now time.Time) jobview.Checkpoints {
	if o.ck == nil {
		return jobview.Checkpoints{}
	}
	hist, pending, completed, failed := o.ck.driver.Stats()
	v := jobview.Checkpoints{Enabled: true, Completed: completed, Failed: failed, InProgress: pending != nil}
	if pending != nil {
		v.History = append(v.History, o.checkpointOf(*pending, now))
	}
	for i := len(hist) - 1; i >= 0; i-- {
		v.History = append(v.History, o.checkpointOf(hist[i], now))
	}
	return v
}

func (o *observer) checkpointOf(st checkpoint.Stats, now time.Time) jobview.Checkpoint {
	sum := st.Summary()
	c := jobview.Checkpoint{ID: int64(st.ID), Status: st.Status.String(), Savepoint: st.Savepoint, Trigger: st.Trigger,
		Seconds: st.Duration(now).Seconds(), Bytes: sum.Bytes, InFlight: sum.InFlightBytes,
		AlignmentSeconds: sum.MaxAlignment.Seconds(), Unaligned: sum.UnalignedSubtasks, Failure: st.Reason}
	for _, s := range st.Subtasks {
		name := ""
		if s.Task.Node >= 0 && s.Task.Node < len(o.g.Nodes) {
			name = o.g.Nodes[s.Task.Node].Name
		}
		c.Subtasks = append(c.Subtasks, jobview.CheckpointSubtask{Stage: name, Subtask: s.Task.Subtask, Acknowledged: true,
			StartDelaySeconds: s.StartDelay.Seconds(), AlignmentSeconds: s.Alignment.Seconds(),
			SyncSeconds: s.Sync.Seconds(), AsyncSeconds: s.Async.Seconds(),
			Bytes: s.Bytes, InFlight: s.InFlightBytes, Unaligned: s.Unaligned})
	}
	return c
}

// lateView reads the late-data account, with each stage's input spread.
func (o *observer) lateView() []jobview.Late {
	var out []jobview.Late
	if o.late != nil {
		for _, l := range o.late.Stats() {
			out = append(out, jobview.Late{Transform: l.Name, Source: l.Source, DroppedLate: l.DroppedLate,
				DroppedClosed: l.DroppedClosed, Arrivals: l.Arrivals, ArrivalP50: l.P50, ArrivalP99: l.P99,
				ArrivalMax: l.MaxArrival})
		}
	}
	// Stages fed by several producers report their spread as a row of
	// their own: it is not tied to one transform's drops.
	spread := map[int]time.Duration{}
	for _, sm := range o.buf {
		if sm.InputSpread > spread[sm.Node] {
			spread[sm.Node] = sm.InputSpread
		}
	}
	for node := range o.g.Nodes {
		if d := spread[node]; d > 0 {
			out = append(out, jobview.Late{Transform: o.g.Nodes[node].Name, InputSpread: d.Seconds()})
		}
	}
	return out
}

// workerView counts SDK workers and the bundles lost with them.
func (o *observer) workerView() jobview.Workers {
	running, lost := o.workers.counts()
	w := jobview.Workers{Running: running, Lost: int64(lost)}
	for _, sm := range o.buf {
		w.BundleRetries += sm.BundleRetries
	}
	return w
}
