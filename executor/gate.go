package executor

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/watermarkmgr"
)

// channelState is what a consumer knows of one input channel.
type channelState struct {
	port    int
	in      watermarkmgr.InputID // the channel's input in its port's manager
	wm      mtime.Time           // the channel's last watermark
	from    int                  // index of its producer in gate.spreadWM
	pt      mtime.Time           // synthetic processing time
	ended   bool
	blocked bool      // delivered the pending barrier; later messages wait
	queue   []Message // messages held back while blocked
}

// gate turns a subtask's incoming envelopes into operator calls: per-port
// watermarks, aligned barriers and end of input.
type gate struct {
	op       Operator
	out      *Output
	ack      func(BarrierID)
	channels []channelState
	ports    []*watermarkmgr.Manager // a port's watermark over its channels
	procTime mtime.Time              // minimum synthetic processing time delivered
	pending  BarrierID               // barrier being aligned; 0 when none
	live     int                     // channels not ended
	finished bool

	// spread, if set, hears the watermark of each producer feeding the
	// subtask (the least over its live channels), in spreadWM.
	spread    *spreadWatch
	spreadWM  []mtime.Time
	spreadSub int // the subtask's index
}

// watchSpread reports producer watermarks to w; from is each channel's
// producing node.
func (g *gate) watchSpread(w *spreadWatch, sub int, from []int) {
	if w == nil {
		return
	}
	idx := map[int]int{}
	for i, f := range from {
		if _, ok := idx[f]; !ok {
			idx[f] = len(idx)
		}
		g.channels[i].from = idx[f]
	}
	g.spread, g.spreadWM, g.spreadSub = w, make([]mtime.Time, len(idx)), sub
}

// observeSpread recomputes each producer's watermark and reports them.
func (g *gate) observeSpread() {
	for i := range g.spreadWM {
		g.spreadWM[i] = mtime.MaxTimestamp
	}
	for i := range g.channels {
		c := &g.channels[i]
		if !c.ended {
			g.spreadWM[c.from] = min(g.spreadWM[c.from], c.wm)
		}
	}
	g.spread.observe(g.spreadSub, g.spreadWM)
}

func newGate(op Operator, out *Output, ack func(BarrierID), ports []int) *gate {
	g := &gate{op: op, out: out, ack: ack}
	var perPort []int // channels on each port
	for _, p := range ports {
		for len(perPort) <= p {
			perPort = append(perPort, 0)
		}
		g.channels = append(g.channels, channelState{port: p, in: watermarkmgr.InputID(perPort[p]),
			pt: mtime.MinTimestamp, wm: mtime.MinTimestamp})
		perPort[p]++
	}
	g.ports = make([]*watermarkmgr.Manager, len(perPort))
	for p, n := range perPort {
		g.ports[p] = watermarkmgr.New(n)
	}
	g.live = len(g.channels)
	g.procTime = mtime.MinTimestamp
	return g
}

// handle processes one envelope, and any messages it releases.
func (g *gate) handle(ctx context.Context, env envelope) error {
	if env.ch < 0 || env.ch >= len(g.channels) {
		return fmt.Errorf("executor: message on unknown channel %d", env.ch)
	}
	c := &g.channels[env.ch]
	if c.blocked {
		c.queue = append(c.queue, env.msg)
		return nil
	}
	return g.deliver(ctx, env.ch, env.msg)
}

func (g *gate) deliver(ctx context.Context, ch int, m Message) error {
	c := &g.channels[ch]
	switch m.Kind {
	case KindData:
		return g.op.Process(ctx, c.port, m.Elems)
	case KindWatermark:
		if err := g.ports[c.port].Advance(c.in, m.Watermark); err != nil {
			return fmt.Errorf("executor: channel %d: %w", ch, err)
		}
		if g.spread != nil && m.Watermark > c.wm {
			c.wm = m.Watermark
			g.observeSpread()
		}
		return g.advance(ctx, c.port)
	case KindProcessingTime:
		if m.Watermark > c.pt {
			c.pt = m.Watermark
			return g.advanceProcTime(ctx)
		}
		return nil
	case KindBarrier:
		return g.barrier(ctx, ch, m.Barrier)
	case KindEnd:
		if c.ended {
			return fmt.Errorf("executor: channel %d ended twice", ch)
		}
		c.ended = true
		if err := g.ports[c.port].End(c.in); err != nil {
			return fmt.Errorf("executor: channel %d: %w", ch, err)
		}
		g.live--
		if err := g.advance(ctx, c.port); err != nil {
			return err
		}
		if err := g.maybeAligned(ctx); err != nil {
			return err
		}
		if g.live == 0 {
			g.finished = true
			return g.op.Finish(ctx)
		}
	}
	return nil
}

// advance tells the operator of a port's new watermark, if it moved. The
// gate sets no holds and marks no channel idle, so it is the minimum over the
// port's channels that have not ended.
func (g *gate) advance(ctx context.Context, port int) error {
	wm, ok := g.ports[port].Emit()
	if !ok {
		return nil
	}
	return g.op.Watermark(ctx, port, wm)
}

// advanceProcTime delivers the minimum synthetic processing time over the
// channels that have not ended, once it moves.
func (g *gate) advanceProcTime(ctx context.Context) error {
	pt := mtime.MaxTimestamp
	for i := range g.channels {
		if !g.channels[i].ended && g.channels[i].pt < pt {
			pt = g.channels[i].pt
		}
	}
	if pt <= g.procTime {
		return nil
	}
	g.procTime = pt
	if p, ok := g.op.(ProcessingTimer); ok {
		return p.ProcessingTime(ctx, pt)
	}
	return g.out.ProcessingTime(ctx, pt)
}

func (g *gate) barrier(ctx context.Context, ch int, id BarrierID) error {
	switch {
	case g.pending == 0:
		g.pending = id
	case id != g.pending:
		return fmt.Errorf("executor: barrier %d arrived on channel %d while aligning %d", id, ch, g.pending)
	}
	g.channels[ch].blocked = true
	return g.maybeAligned(ctx)
}

// maybeAligned completes the pending barrier once every live channel has
// delivered it: snapshot, forward, acknowledge, then release held messages.
func (g *gate) maybeAligned(ctx context.Context) error {
	if g.pending == 0 {
		return nil
	}
	for i := range g.channels {
		if !g.channels[i].ended && !g.channels[i].blocked {
			return nil
		}
	}
	id := g.pending
	g.pending = 0
	if err := g.op.Barrier(ctx, id); err != nil {
		return err
	}
	if err := g.out.barrier(ctx, id); err != nil {
		return err
	}
	g.ack(id)
	for i := range g.channels {
		g.channels[i].blocked = false
	}
	for i := range g.channels {
		for len(g.channels[i].queue) > 0 && !g.channels[i].blocked {
			m := g.channels[i].queue[0]
			g.channels[i].queue = g.channels[i].queue[1:]
			if err := g.deliver(ctx, i, m); err != nil {
				return err
			}
		}
	}
	return nil
}
