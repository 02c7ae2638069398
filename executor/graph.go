package executor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/internal/contain"
)

// Node is a stage of the graph: Parallelism subtasks of one operator kind.
type Node struct {
	Name        string
	Parallelism int
	// New returns the operator of one subtask, which emits on out.
	New func(subtask int, out *Output) (Operator, error)
	// NewSource is set instead of New for nodes without inputs.
	NewSource func(subtask int, out *Output) (Source, error)
	// Inputs are the node's input ports, in port order.
	Inputs []NodeInput
	// Outputs is the number of output ports.
	Outputs int
	// Arrivals, if set, records the arrival delay of every element the
	// node emits: set for sources, whose output is where event time enters
	// the job.
	Arrivals *TransformLate
}

// NodeInput connects an input port to an output port of an earlier node.
// Several NodeInputs may name the same port: a flatten reads many.
type NodeInput struct {
	Port      int
	From      int // index of the producing node
	Output    int // its output port
	Partition Partition
	Key       KeyFunc // for Hash
}

// Graph is a dataflow graph; nodes come after the nodes they read.
type Graph struct {
	Nodes []*Node
	// InboxSize bounds each subtask's inbox; default 16 messages.
	InboxSize int
	// OnAck, if set, hears every subtask's acknowledgement of a barrier.
	OnAck func(node, subtask int, id BarrierID)
	// SpreadWarning, if positive, is the watermark spread between the
	// producers of a node fed by several above which Warn hears of it.
	SpreadWarning time.Duration
	Warn          func(node int, msg string) // node: index in Nodes
	// Checkpoints, if set, takes part in checkpoints for every subtask:
	// snapshots, in-flight data, aligned timeouts.
	Checkpoints Checkpointer
	// Now is the clock of checkpoint statistics and aligned timeouts;
	// default time.Now.
	Now func() time.Time
	// NoStats turns the subtasks' counts off (Sample then has nothing):
	// for measuring what they cost.
	NoStats bool
	// Restore, if set, returns what each subtask of a restored job starts
	// from (nil: a fresh start); see restore.go.
	Restore func(node, subtask int) *SubtaskRestore

	// targets are the subtasks barriers are injected into: sources, and
	// subtasks running on after their inputs ended. lastBarrier is the
	// newest injected.
	mu          sync.Mutex
	targets     []*subtask
	lastBarrier BarrierID
	listeners   []*subtask // operators that hear of completed checkpoints (commit.go)
	// sourceListeners are the sources that hear of them (commit.go).
	sourceListeners []*subtask
	// subs are the running graph's subtasks, for Sample.
	subs [][]*subtask
}

type subtask struct {
	node, index int
	in          *inbox
	ports       []int // port of each input channel
	from        []int // producing node of each input channel
	spread      *spreadWatch
	out         *Output
	inject      chan BarrierID // barriers injected, for sources and subtasks whose inputs ended
	done        chan struct{}  // closed when the subtask's goroutine returns
	completions *completions   // completed checkpoints, for a CheckpointListener
	stats       *subtaskStats
}

// Run runs the graph until every subtask has finished, or the first error.
// Barriers sent on the returned function's channel are injected at every
// source subtask.
func (g *Graph) Run(ctx context.Context, barriers <-chan BarrierID) error {
	subs, err := g.wire()
	if err != nil {
		return err
	}
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel(err) })
	}
	if g.Now == nil {
		g.Now = time.Now
	}
	g.mu.Lock()
	g.targets, g.lastBarrier, g.listeners, g.sourceListeners = nil, 0, nil, nil
	g.subs = subs
	g.mu.Unlock()
	var sources []Source // every source made, for graphEnded
	for _, row := range subs {
		for _, st := range row {
			n := g.Nodes[st.node]
			var op Operator
			var src Source
			var err error
			rs := g.restoreOf(st.node, st.index)
			if len(n.Inputs) == 0 {
				if n.NewSource == nil {
					return fmt.Errorf("executor: node %s has no inputs and no NewSource", n.Name)
				}
				src, err = n.NewSource(st.index, st.out)
				if err == nil {
					sources = append(sources, src)
				}
				if rs != nil && rs.Finished {
					src = endedSource{}
				}
				if err == nil {
					g.listen(st, src, true)
				}
				g.mu.Lock()
				g.targets = append(g.targets, st)
				g.mu.Unlock()
			} else {
				op, err = n.New(st.index, st.out)
				if err == nil {
					g.listen(st, op, false)
				}
			}
			if err != nil {
				return fmt.Errorf("executor: %s[%d]: %w", n.Name, st.index, err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(st.done)
				if err := g.runContained(ctx, st, op, src, rs); err != nil {
					fail(fmt.Errorf("%s[%d]: %w", n.Name, st.index, err))
					return
				}
				if g.Checkpoints != nil {
					// The checkpointer's code, on this goroutine: contained too.
					if err := contain.Call(func() error { g.Checkpoints.Finished(st.node, st.index); return nil }); err != nil {
						fail(fmt.Errorf("%s[%d]: checkpoints: %w", n.Name, st.index, err))
					}
				}
			}()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case <-done:
			err := firstErr
			if err == nil && ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			return graphEnded(parent, sources, err)
		case id := <-barriers:
			g.mu.Lock()
			g.lastBarrier = id
			targets := g.targets
			g.mu.Unlock()
			for _, s := range targets {
				select {
				case s.inject <- id:
				case <-s.done:
				default:
					// A target that does not poll (a long Finish) must not
					// stop the graph: its checkpoint expires instead.
				}
			}
		}
	}
}

// inputsEnded makes a subtask whose inputs all ended a target of barrier
// injection, and injects the newest barrier if it has not seen it: it may
// have been sent only to sources that had finished.
func (g *Graph) inputsEnded(st *subtask, last BarrierID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.targets = append(slices.Clip(g.targets), st)
	if g.lastBarrier > last {
		select {
		case st.inject <- g.lastBarrier:
		default:
		}
	}
}

// runContained is runSubtask with a panic in it, in the operator's or
// source's code or the executor's own, returned as the subtask's error.
func (g *Graph) runContained(ctx context.Context, st *subtask, op Operator, src Source, rs *SubtaskRestore) error {
	return contain.Call(func() error {
		contain.AtCtx(contain.Subtask, ctx)
		return g.runSubtask(ctx, st, op, src, rs)
	})
}

func (g *Graph) runSubtask(ctx context.Context, st *subtask, op Operator, src Source, rs *SubtaskRestore) error {
	if st.stats != nil {
		st.stats.started.Store(time.Now().UnixNano())
		defer func() { st.stats.ended.Store(time.Now().UnixNano()) }()
	}
	if st.completions != nil {
		defer st.completions.note(0, true)
	}
	ack := func(id BarrierID) {
		if g.OnAck != nil {
			g.OnAck(st.node, st.index, id)
		}
	}
	inj := &Injector{ctx: ctx, in: st.inject, out: st.out, ack: ack, op: op,
		cp: g.Checkpoints, node: st.node, sub: st.index, now: g.Now}
	if src != nil {
		if rs != nil {
			inj.restored = rs.State
		}
		if l, ok := src.(CheckpointListener); ok && st.completions != nil {
			inj.completions, inj.listener = st.completions, l
		}
		if err := src.Run(ctx, st.out, inj); err != nil {
			return err
		}
		return st.out.end(ctx)
	}
	// Finish may run on for long (an unbounded SDF) and poll for barriers.
	ctx = context.WithValue(ctx, injectorKey{}, inj)
	inj.ctx = ctx
	gt := newGate(op, st.out, ack, st.ports)
	gt.stats = st.stats
	gt.watchSpread(st.spread, st.index, st.from)
	gt.cp, gt.node, gt.sub, gt.now = g.Checkpoints, st.node, st.index, g.Now
	gt.scan = st.in.scan
	if err := gt.restore(ctx, rs); err != nil {
		return err
	}
	gt.inputsEnded = func(last BarrierID) {
		inj.last = last
		inj.watermarks = gt.inputWatermarks(nil) // at the end of time now
		g.inputsEnded(st, last)
	}
	waker, _ := op.(Waker)
	var alarm, align *time.Timer
	defer func() {
		if alarm != nil {
			alarm.Stop()
		}
		if align != nil {
			align.Stop()
		}
	}()
	// woke says the last turn ran a due timer ahead of the data lane: the
	// next turn looks at the data lane first. A wake that is always due
	// (an SDF whose residuals ask no resume delay, each bundle leaving
	// another) would otherwise starve the lane, and the barriers in it,
	// for as long as the stream runs.
	woke := false
	for !gt.finished {
		// Control messages first, then what the gate holds ready; then
		// wait for the data lane, a control message or a timer.
		if ok, err := st.in.pump(ctx, gt); err != nil {
			return err
		} else if ok {
			continue
		}
		var wake, aligned <-chan time.Time
		if waker != nil {
			if at, ok := waker.NextWake(); ok {
				alarm = resetTimer(alarm, at)
				wake = alarm.C
			}
		}
		if at, ok := gt.switchDeadline(); ok {
			align = resetTimer(align, at)
			aligned = align.C
		}
		// Timers that are due come before more data, but not twice in a
		// row; then the data lane; then wait for any of them.
		var ready <-chan struct{}
		var idleSince time.Time
		dueFirst := wake
		if woke {
			dueFirst = nil
		}
		woke = false
		select {
		case now := <-dueFirst:
			if err := waker.Wake(ctx, now); err != nil {
				return err
			}
			woke = true
			continue
		case <-aligned:
			if err := gt.alignTimeout(ctx, g.Now()); err != nil {
				return err
			}
			continue
		default:
			if ok, err := st.in.next(ctx, gt); err != nil {
				return err
			} else if ok {
				continue
			}
			ready = st.in.data.ready
		}
		if st.stats != nil {
			idleSince = time.Now()
		}
		select {
		case env := <-st.in.prio:
			if err := gt.control(ctx, env); err != nil {
				return err
			}
		case <-ready:
		case now := <-wake:
			if err := waker.Wake(ctx, now); err != nil {
				return err
			}
		case <-aligned:
			if err := gt.alignTimeout(ctx, g.Now()); err != nil {
				return err
			}
		case <-completionsOf(st):
			if err := deliverCompletion(ctx, st.completions, op.(CheckpointListener)); err != nil {
				return err
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if st.stats != nil {
			waited(&st.stats.idle, idleSince)
		}
	}
	return st.out.end(ctx)
}

// resetTimer returns t, or a new timer, set to fire at at.
func resetTimer(t *time.Timer, at time.Time) *time.Timer {
	if t == nil {
		return time.NewTimer(time.Until(at))
	}
	t.Reset(time.Until(at))
	return t
}

// wire creates every subtask and channel.
func (g *Graph) wire() ([][]*subtask, error) {
	size := g.InboxSize
	if size <= 0 {
		size = 16
	}
	subs := make([][]*subtask, len(g.Nodes))
	for i, n := range g.Nodes {
		if n.Parallelism < 1 {
			return nil, fmt.Errorf("executor: node %s has parallelism %d", n.Name, n.Parallelism)
		}
		// A priority lane holds a barrier of every input channel twice
		// over (a stale one and the next), so producers never wait on it.
		channels := 0
		for _, in := range n.Inputs {
			if in.From >= 0 && in.From < len(g.Nodes) {
				channels += g.Nodes[in.From].Parallelism
			}
		}
		for j := range n.Parallelism {
			ports := make([][]*edgeOut, n.Outputs)
			var stats *subtaskStats
			if !g.NoStats {
				stats = newSubtaskStats()
			}
			subs[i] = append(subs[i], &subtask{node: i, index: j, inject: make(chan BarrierID, 4), done: make(chan struct{}),
				in:    &inbox{data: newLane(size), prio: make(chan envelope, 2*channels+1)},
				out:   &Output{ports: ports, arrivals: n.Arrivals, stats: stats},
				stats: stats})
		}
	}
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in.From < 0 || in.From >= i {
				return nil, fmt.Errorf("executor: node %s reads node %d, which does not come before it", n.Name, in.From)
			}
			if in.Output >= g.Nodes[in.From].Outputs {
				return nil, fmt.Errorf("executor: node %s reads output %d of %s, which has %d", n.Name, in.Output, g.Nodes[in.From].Name, g.Nodes[in.From].Outputs)
			}
			if in.Partition == Hash && in.Key == nil {
				return nil, fmt.Errorf("executor: node %s: hash input without a key function", n.Name)
			}
			for _, p := range subs[in.From] {
				e := &edgeOut{part: in.Partition, key: in.Key, name: g.Nodes[in.From].Name + "->" + n.Name}
				if p.stats != nil {
					e.backpressured = &p.stats.backpressured
				}
				for _, c := range subs[i] {
					e.lanes = append(e.lanes, c.in.data)
					e.prio = append(e.prio, c.in.prio)
					e.chIdx = append(e.chIdx, len(c.ports))
					c.ports = append(c.ports, in.Port)
					c.from = append(c.from, in.From)
				}
				p.out.ports[in.Output] = append(p.out.ports[in.Output], e)
			}
		}
	}
	for i, n := range g.Nodes {
		producers := map[int]bool{}
		for _, in := range n.Inputs {
			producers[in.From] = true
		}
		if len(producers) < 2 {
			continue
		}
		w := newSpreadWatch(i, n.Name, n.Parallelism, g.SpreadWarning, g.Warn)
		for _, st := range subs[i] {
			st.spread = w
		}
	}
	return subs, nil
}

// Injector lets a source put barriers into its output between emissions.
type Injector struct {
	ctx  context.Context
	in   <-chan BarrierID
	out  *Output
	ack  func(BarrierID)
	n    int
	last BarrierID // newest barrier forwarded; older ones are stale
	// op is the operator of a subtask whose inputs ended, which snapshots
	// at the barrier; nil for sources, whose snapshot is the
	// Checkpointer's alone.
	op        Operator
	cp        Checkpointer
	node, sub int
	now       func() time.Time
	state     func() ([]byte, error) // see OnSnapshot
	// watermarks are the input watermarks of an operator whose inputs
	// ended, recorded with its snapshots.
	watermarks []mtime.Time
	restored   []byte // see Restored
	// completions and listener: a source that is a CheckpointListener
	// hears of completed checkpoints in Poll.
	completions *completions
	listener    CheckpointListener
}

// Barrier returns the newest barrier the source has forwarded; inside an
// OnSnapshot function, the barrier whose snapshot it is taking.
func (inj *Injector) Barrier() BarrierID { return inj.last }

// OnSnapshot registers what a source adds to each snapshot it takes: its
// position (TestStream's next event, whether Impulse fired, Kafka
// offsets), so a restored job resumes it rather than starting over. fn is
// called from the source's goroutine, inside Poll.
func (inj *Injector) OnSnapshot(fn func() ([]byte, error)) { inj.state = fn }

// Poll forwards every barrier waiting for this source and acknowledges it.
// It returns how many barriers the source has forwarded in all.
func (inj *Injector) Poll() (int, error) {
	for {
		select {
		case id := <-inj.in:
			if id <= inj.last {
				continue
			}
			inj.last = id
			var arrival time.Time
			if inj.now != nil {
				arrival = inj.now()
			}
			if inj.op != nil {
				if err := inj.op.Barrier(inj.ctx, id); err != nil {
					return inj.n, err
				}
			}
			var state []byte
			snap := inj.state
			if ss, ok := inj.op.(StateSnapshotter); ok {
				snap = func() ([]byte, error) { return ss.SnapshotState(id) }
			}
			if snap != nil {
				var err error
				if state, err = snap(); err != nil {
					return inj.n, fmt.Errorf("snapshot %d: %w", id, err)
				}
			}
			if inj.cp != nil {
				if err := inj.cp.Snapshot(inj.node, inj.sub, id); err != nil {
					return inj.n, fmt.Errorf("snapshot %d: %w", id, err)
				}
			}
			var syncDur time.Duration
			if inj.now != nil {
				syncDur = inj.now().Sub(arrival)
			}
			if err := inj.out.barrier(inj.ctx, id); err != nil {
				return inj.n, err
			}
			inj.n++
			inj.ack(id)
			if inj.cp != nil {
				inj.cp.Done(BarrierRecord{Node: inj.node, Subtask: inj.sub, ID: id, Arrival: arrival, Sync: syncDur, State: state,
					Watermarks: inj.watermarks})
			}
		default:
			if inj.completions != nil {
				select {
				case <-inj.completions.ready:
					if err := deliverCompletion(inj.ctx, inj.completions, inj.listener); err != nil {
						return inj.n, err
					}
				default:
				}
			}
			return inj.n, nil
		}
	}
}
