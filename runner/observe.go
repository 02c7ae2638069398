package runner

import (
	"context"
	"sync"
	"time"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/jobview"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/translate"
)

// sampleEvery is how often a running job's figures are sampled for its
// view (the UI, the CLI and /metrics read the newest sample).
const sampleEvery = time.Second

// stateEvery is how often the store's per-stage sizes are read: they cost
// a scan of small namespaces, more than the counters.
const stateEvery = 10 * time.Second

// observer samples a running job's figures into a jobview.Job. The
// figures stay where they are counted (the executor's subtasks, the Kafka
// readers, the checkpoint coordinator, the late-data account); a sample
// is a copy, and rates and ratios are taken between two samples.
type observer struct {
	j       *Job
	plan    *translate.Plan
	g       *executor.Graph
	late    *executor.LateData
	workers *workerSet
	store   *state.Store

	mu         sync.Mutex
	ck         *jobCheckpoints // set while checkpoints run
	last       *jobview.Job    // the newest sample
	prev       map[[2]int]jobview.Counts
	prevAt     time.Time
	stateBytes []int64
	stateAt    time.Time
	buf        []executor.SubtaskSample
}

func newObserver(j *Job, plan *translate.Plan, g *executor.Graph, late *executor.LateData, ws *workerSet, store *state.Store) *observer {
	o := &observer{j: j, plan: plan, g: g, late: late, workers: ws, store: store}
	o.stateBytes = make([]int64, len(plan.Stages))
	for i := range o.stateBytes {
		o.stateBytes[i] = -1
	}
	return o
}

func (o *observer) setCheckpoints(ck *jobCheckpoints) {
	o.mu.Lock()
	o.ck = ck
	o.mu.Unlock()
}

// run samples every sampleEvery until ctx ends, then once more, so a
// finished job shows its final figures.
func (o *observer) run(ctx context.Context) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	o.sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			o.sample(time.Now())
			return
		case now := <-t.C:
			o.sample(now)
		}
	}
}

// latest returns the newest sample, nil before the first.
func (o *observer) latest() *jobview.Job {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last
}

// sample reads every figure and keeps the result as the newest sample.
func (o *observer) sample(now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v := &jobview.Job{SampledAt: now}
	if !o.prevAt.IsZero() {
		v.Interval = now.Sub(o.prevAt)
	}
	o.buf = o.g.Sample(o.buf[:0])
	if now.Sub(o.stateAt) >= stateEvery {
		o.readStateSizes()
		o.stateAt = now
	}
	v.Stages, v.Edges = o.stages(now, v.Interval)
	v.Partitions, v.Alignment = o.splitView(now)
	v.Checkpoints = o.checkpointView(now)
	v.Late = o.lateView()
	v.Workers = o.workerView()
	for _, u := range o.j.Metrics.UserValues() {
		v.User = append(v.User, jobview.UserMetric{Namespace: u.Namespace, Name: u.Name, Transform: u.Transform,
			Kind: u.Kind, Value: u.Value, Count: u.Count, Sum: u.Sum, Min: u.Min, Max: u.Max})
	}
	o.prevAt, o.last = now, v
}

// stages turns the subtask samples into stages with rates and ratios over
// the interval since the last sample.
func (o *observer) stages(now time.Time, interval time.Duration) ([]jobview.Stage, []jobview.Edge) {
	stages := make([]jobview.Stage, len(o.g.Nodes))
	var edges []jobview.Edge
	for i, n := range o.g.Nodes {
		st := jobview.Stage{Index: i, Name: n.Name, Parallelism: n.Parallelism, StateBytes: -1}
		if i < len(o.plan.Stages) {
			st.Kind = o.plan.Stages[i].Kind.String()
			st.StateBytes = o.stateBytes[i]
		}
		seen := map[[2]int]bool{}
		for _, in := range n.Inputs {
			if k := [2]int{in.From, int(in.Partition)}; !seen[k] {
				seen[k] = true
				edges = append(edges, jobview.Edge{From: in.From, To: i, Partition: partitionName(in.Partition)})
			}
		}
		stages[i] = st
	}
	next := make(map[[2]int]jobview.Counts, len(o.buf))
	for _, sm := range o.buf {
		c := jobview.Counts{ElementsIn: sm.ElementsIn, ElementsOut: sm.ElementsOut, BytesIn: sm.BytesIn, BytesOut: sm.BytesOut,
			Bundles: sm.Bundles, BundleSeconds: sm.BundleTime.Seconds(),
			IdleSeconds: sm.Idle.Seconds(), BackpressuredSeconds: sm.Backpressured.Seconds(),
			BusySeconds: max(sm.Running-sm.Idle-sm.Backpressured, 0).Seconds()}
		key := [2]int{sm.Node, sm.Subtask}
		prev := o.prev[key]
		sub := jobview.Subtask{Index: sm.Subtask, Counts: c, Rates: c.Rates(prev, interval), Ratios: c.Ratios(prev),
			InputWatermark: int64(sm.InputWatermark), OutputWatermark: int64(sm.OutputWatermark),
			WatermarkLag: jobview.Lag(now, int64(sm.OutputWatermark)),
			QueueDepth:   sm.QueueDepth, QueueCapacity: sm.QueueCapacity}
		if len(o.g.Nodes[sm.Node].Inputs) == 0 {
			// A source has no input: its input watermark is its output's.
			sub.InputWatermark = sub.OutputWatermark
		}
		next[key] = c
		stages[sm.Node].Subtasks = append(stages[sm.Node].Subtasks, sub)
	}
	o.prev = next
	for i := range stages {
		stages[i].Rollup(now)
	}
	return stages, edges
}

func partitionName(p executor.Partition) string {
	switch p {
	case executor.Hash:
		return "hash"
	case executor.Broadcast:
		return "broadcast"
	}
	return "forward"
}

// readStateSizes reads each stateful stage's bytes in the store, over its
// subtasks' namespaces.
func (o *observer) readStateSizes() {
	for i, s := range o.plan.Stages {
		if i >= len(o.g.Nodes) || len(stageNamespaces(s, 0)) == 0 {
			continue
		}
		var total int64
		for sub := range o.g.Nodes[i].Parallelism {
			for _, ns := range stageNamespaces(s, sub) {
				n, err := o.store.NamespaceBytes(ns)
				if err != nil {
					return // the store is closing: keep the last sizes
				}
				total += n
			}
		}
		o.stateBytes[i] = total
	}
}
