package executor

import (
	"context"
	"fmt"
	"sync"
	"time"
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
	Warn          func(msg string)
}

type subtask struct {
	node, index int
	inbox       chan envelope
	ports       []int // port of each input channel
	from        []int // producing node of each input channel
	spread      *spreadWatch
	out         *Output
	inject      chan BarrierID // sources only
}

// Run runs the graph until every subtask has finished, or the first error.
// Barriers sent on the returned function's channel are injected at every
// source subtask.
func (g *Graph) Run(ctx context.Context, barriers <-chan BarrierID) error {
	subs, err := g.wire()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel(err) })
	}
	var sources []*subtask
	for _, row := range subs {
		for _, st := range row {
			n := g.Nodes[st.node]
			var op Operator
			var src Source
			var err error
			if len(n.Inputs) == 0 {
				if n.NewSource == nil {
					return fmt.Errorf("executor: node %s has no inputs and no NewSource", n.Name)
				}
				src, err = n.NewSource(st.index, st.out)
				st.inject = make(chan BarrierID, 4)
				sources = append(sources, st)
			} else {
				op, err = n.New(st.index, st.out)
			}
			if err != nil {
				return fmt.Errorf("executor: %s[%d]: %w", n.Name, st.index, err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := g.runSubtask(ctx, st, op, src); err != nil {
					fail(fmt.Errorf("%s[%d]: %w", n.Name, st.index, err))
				}
			}()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case <-done:
			if firstErr == nil && ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return firstErr
		case id := <-barriers:
			for _, s := range sources {
				select {
				case s.inject <- id:
				case <-ctx.Done():
				}
			}
		}
	}
}

func (g *Graph) runSubtask(ctx context.Context, st *subtask, op Operator, src Source) error {
	ack := func(id BarrierID) {
		if g.OnAck != nil {
			g.OnAck(st.node, st.index, id)
		}
	}
	if src != nil {
		inj := &Injector{ctx: ctx, in: st.inject, out: st.out, ack: ack}
		if err := src.Run(ctx, st.out, inj); err != nil {
			return err
		}
		return st.out.end(ctx)
	}
	gt := newGate(op, st.out, ack, st.ports)
	gt.watchSpread(st.spread, st.index, st.from)
	waker, _ := op.(Waker)
	var alarm *time.Timer
	defer func() {
		if alarm != nil {
			alarm.Stop()
		}
	}()
	for !gt.finished {
		var wake <-chan time.Time
		if waker != nil {
			if at, ok := waker.NextWake(); ok {
				if alarm == nil {
					alarm = time.NewTimer(time.Until(at))
				} else {
					alarm.Reset(time.Until(at))
				}
				wake = alarm.C
			}
		}
		select {
		case env := <-st.inbox:
			if err := gt.handle(ctx, env); err != nil {
				return err
			}
		case now := <-wake:
			if err := waker.Wake(ctx, now); err != nil {
				return err
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return st.out.end(ctx)
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
		for j := range n.Parallelism {
			ports := make([][]*edgeOut, n.Outputs)
			subs[i] = append(subs[i], &subtask{node: i, index: j,
				inbox: make(chan envelope, size), out: &Output{ports: ports, arrivals: n.Arrivals}})
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
				for _, c := range subs[i] {
					e.to = append(e.to, c.inbox)
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
		w := newSpreadWatch(n.Name, n.Parallelism, g.SpreadWarning, g.Warn)
		for _, st := range subs[i] {
			st.spread = w
		}
	}
	return subs, nil
}

// Injector lets a source put barriers into its output between emissions.
type Injector struct {
	ctx context.Context
	in  <-chan BarrierID
	out *Output
	ack func(BarrierID)
	n   int
}

// Poll forwards every barrier waiting for this source and acknowledges it.
// It returns how many barriers the source has forwarded in all.
func (inj *Injector) Poll() (int, error) {
	for {
		select {
		case id := <-inj.in:
			if err := inj.out.barrier(inj.ctx, id); err != nil {
				return inj.n, err
			}
			inj.n++
			inj.ack(id)
		default:
			return inj.n, nil
		}
	}
}
