package executor

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/watermarkmgr"
)

// channelState is what a consumer knows of one input channel.
type channelState struct {
	port  int
	in    watermarkmgr.InputID // the channel's input in its port's manager
	from  int                  // index of its producer in gate.spreadWM
	pt    mtime.Time           // synthetic processing time
	ended bool
	got   bool // delivered the pending barrier
	// blocked holds back what the channel delivers after the pending
	// barrier until every channel has delivered it (aligned only).
	blocked bool
	queue   []Message // messages held back while blocked
}

// gate turns a subtask's incoming envelopes into operator calls: per-port
// watermarks, barriers (aligned, or unaligned once the checkpoint's
// aligned timeout passes) and end of input.
type gate struct {
	op       Operator
	out      *Output
	ack      func(BarrierID)
	channels []channelState
	ports    []*watermarkmgr.Manager // a port's watermark over its channels
	procTime mtime.Time              // minimum synthetic processing time delivered
	live     int                     // channels not ended
	finished bool

	pending BarrierID // barrier being aligned; 0 when none
	// last is the newest barrier completed or abandoned here: barriers up
	// to it that still arrive belong to checkpoints that are over.
	last      BarrierID
	arrival   time.Time // the pending barrier's first arrival
	snapAt    time.Time // when its snapshot was taken
	sync      time.Duration
	unaligned bool // its snapshot is taken and the barrier forwarded
	switchAt  time.Time
	canSwitch bool
	flight    inFlight // data the unaligned barrier overtook
	// watermarks and state are what the snapshot recorded of the
	// subtask's input watermarks and the operator's own state.
	watermarks []mtime.Time
	state      []byte

	// Checkpoint wiring; cp nil takes part in no checkpoint but barriers
	// still align and flow.
	cp        Checkpointer
	node, sub int
	now       func() time.Time
	// inputsEnded, if set, is called once every input ended, before the
	// operator finishes: barriers can reach it only by injection now.
	inputsEnded func(last BarrierID)

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
		if wm, live := g.ports[c.port].InputWatermark(c.in); live {
			g.spreadWM[c.from] = min(g.spreadWM[c.from], wm)
		}
	}
	g.spread.observe(g.spreadSub, g.spreadWM)
}

func newGate(op Operator, out *Output, ack func(BarrierID), ports []int) *gate {
	g := &gate{op: op, out: out, ack: ack, now: time.Now}
	var perPort []int // channels on each port
	for _, p := range ports {
		for len(perPort) <= p {
			perPort = append(perPort, 0)
		}
		g.channels = append(g.channels, channelState{port: p, in: watermarkmgr.InputID(perPort[p]),
			pt: mtime.MinTimestamp})
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
		if g.unaligned && !c.got {
			// Sent before the barrier, processed after the snapshot: the
			// snapshot must carry it.
			g.flight.add(ch, c.port, m.Elems)
		}
		return g.op.Process(ctx, c.port, m.Elems)
	case KindWatermark:
		if err := g.ports[c.port].Advance(c.in, m.Watermark); err != nil {
			return fmt.Errorf("executor: channel %d: %w", ch, err)
		}
		if g.spread != nil {
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
			if g.inputsEnded != nil {
				g.inputsEnded(g.last)
			}
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
	if id <= g.last || (g.pending != 0 && id < g.pending) {
		// A checkpoint that is over (expired, or abandoned here for a
		// newer one): only one is in flight, so the newer one supersedes it.
		return nil
	}
	if g.pending != 0 && id > g.pending {
		// The pending checkpoint expired upstream before every channel
		// brought its barrier: drop it and release what it held back.
		g.abandon()
	}
	if g.pending == 0 {
		g.start(id)
	}
	c := &g.channels[ch]
	c.got = true
	c.blocked = !g.unaligned
	if err := g.release(ctx); err != nil { // only after an abandon is anything queued
		return err
	}
	if !g.unaligned && g.canSwitch && !g.now().Before(g.switchAt) {
		return g.goUnaligned(ctx)
	}
	return g.maybeAligned(ctx)
}

func (g *gate) start(id BarrierID) {
	g.pending, g.arrival, g.unaligned, g.flight = id, g.now(), false, inFlight{}
	g.canSwitch = false
	if g.cp != nil {
		g.switchAt, g.canSwitch = g.cp.SwitchAt(id)
	}
}

func (g *gate) abandon() {
	g.last, g.pending, g.unaligned, g.flight = g.pending, 0, false, inFlight{}
	for i := range g.channels {
		g.channels[i].got, g.channels[i].blocked = false, false
	}
}

// inputWatermarks appends each port's input watermark to b.
func (g *gate) inputWatermarks(b []mtime.Time) []mtime.Time {
	for _, p := range g.ports {
		b = append(b, p.Input())
	}
	return b
}

// switchDeadline says when the pending barrier's alignment times out.
func (g *gate) switchDeadline() (time.Time, bool) {
	if g.pending == 0 || g.unaligned || !g.canSwitch {
		return time.Time{}, false
	}
	return g.switchAt, true
}

// alignTimeout switches the pending barrier to unaligned if its aligned
// timeout has passed by now.
func (g *gate) alignTimeout(ctx context.Context, now time.Time) error {
	if at, ok := g.switchDeadline(); !ok || now.Before(at) {
		return nil
	}
	return g.goUnaligned(ctx)
}

// goUnaligned snapshots and forwards the pending barrier before every
// channel has delivered it. What the channels still without it deliver
// until their barrier is processed as usual and also recorded as in-flight
// data, since the snapshot does not include it.
func (g *gate) goUnaligned(ctx context.Context) error {
	g.unaligned = true
	if err := g.snapshot(ctx); err != nil {
		return err
	}
	for i := range g.channels {
		g.channels[i].blocked = false
	}
	if err := g.release(ctx); err != nil {
		return err
	}
	return g.maybeAligned(ctx)
}

// snapshot takes the operator's snapshot of the pending barrier and sends
// the barrier on.
func (g *gate) snapshot(ctx context.Context) error {
	id := g.pending
	g.snapAt = g.now()
	if err := g.op.Barrier(ctx, id); err != nil {
		return err
	}
	g.state = nil
	if ss, ok := g.op.(StateSnapshotter); ok {
		st, err := ss.SnapshotState(id)
		if err != nil {
			return fmt.Errorf("snapshot %d: %w", id, err)
		}
		g.state = st
	}
	g.watermarks = g.inputWatermarks(g.watermarks[:0])
	if g.cp != nil {
		if err := g.cp.Snapshot(g.node, g.sub, id); err != nil {
			return fmt.Errorf("snapshot %d: %w", id, err)
		}
	}
	g.sync = g.now().Sub(g.snapAt)
	return g.out.barrier(ctx, id)
}

// maybeAligned completes the pending barrier once every live channel has
// delivered it: aligned, snapshot, forward, acknowledge, then release held
// messages; unaligned, the snapshot is taken and the in-flight data is now
// complete.
func (g *gate) maybeAligned(ctx context.Context) error {
	if g.pending == 0 {
		return nil
	}
	for i := range g.channels {
		if !g.channels[i].ended && !g.channels[i].got {
			return nil
		}
	}
	id := g.pending
	if !g.unaligned {
		if err := g.snapshot(ctx); err != nil {
			return err
		}
	}
	rec := BarrierRecord{Node: g.node, Subtask: g.sub, ID: id, Arrival: g.arrival,
		Alignment: g.snapAt.Sub(g.arrival), Sync: g.sync, Unaligned: g.unaligned, InFlight: g.flight.buf,
		Watermarks: slices.Clone(g.watermarks), State: g.state}
	g.last, g.pending, g.unaligned, g.flight = id, 0, false, inFlight{}
	g.ack(id)
	if g.cp != nil {
		g.cp.Done(rec)
	}
	for i := range g.channels {
		g.channels[i].got, g.channels[i].blocked = false, false
	}
	return g.release(ctx)
}

// release delivers the messages channels held back, in order, until a
// channel is blocked again.
func (g *gate) release(ctx context.Context) error {
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
