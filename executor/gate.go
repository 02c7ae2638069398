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
	// taken and delivered count the channel's in-band messages (barriers
	// aside): taken from the data lane, and handed to the operator. The
	// ones in between are in queue.
	taken, delivered uint64
	// announced says the pending barrier came on the priority lane, pos
	// messages into the channel's stream; got, that it took effect here
	// (aligned: everything before it was delivered; unaligned: everything
	// before it is recorded as in-flight data).
	announced bool
	pos       uint64
	got       bool
	// blocked holds back what the channel delivers after the pending
	// barrier until every channel has delivered it (aligned only).
	blocked bool
	// queue holds messages taken but not yet delivered: held back while
	// blocked, or behind a deferred barrier, or behind such messages.
	// (Data an unaligned barrier overtakes stays in the data lane.)
	queue []Message
	// deferred are barriers of later checkpoints that came behind the
	// pending one (priority lane messages, with their positions); they
	// are announced once it completes, and the channel delivers nothing
	// past the first of them meanwhile.
	deferred []Message
	// flightWM and flightPT are the newest watermark and processing time
	// the pending unaligned barrier overtook on the channel: in flight,
	// as its data is (ChannelMark); flightIdle and flightActive, the
	// newest status it overtook, if any.
	flightWM, flightPT       mtime.Time
	flightIdle, flightActive bool
}

// held says the channel may not deliver its next message now.
func (c *channelState) held() bool {
	return c.blocked || len(c.deferred) > 0 && c.delivered == c.deferred[0].pos
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
	rr       int // the channel deliverQueued looks at first

	// scan reads the messages of the subtask's data lane not yet taken,
	// in order, without taking them (inbox.scan); an unaligned barrier
	// records the data it overtakes from there.
	scan func(func(envelope) bool)

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
	// watermarks, marks and state are what the snapshot recorded of the
	// subtask's input watermarks, per port and per channel, and the
	// operator's own state.
	watermarks []mtime.Time
	marks      []ChannelMark
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

	// stats, if set, counts what the subtask takes in; portWM is each
	// port's last watermark, whose least is the subtask's input watermark.
	stats  *subtaskStats
	portWM []mtime.Time

	// status is what the subtask last told its consumers, once
	// statusSent: idle while every live input is idle (statusChanged).
	status     watermarkmgr.Status
	statusSent bool
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
		if wm, live := g.ports[c.port].InputWatermark(c.in); live && !g.ports[c.port].IsIdle(c.in) {
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
			pt: mtime.MinTimestamp, flightWM: mtime.MinTimestamp, flightPT: mtime.MinTimestamp})
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

// handle takes one message of the data lane: it is delivered at once,
// or queued behind what the channel already has queued or while the
// channel is held back. A barrier in the data lane (an edge without a
// priority lane) is announced at its own place.
func (g *gate) handle(ctx context.Context, env envelope) error {
	if env.ch < 0 || env.ch >= len(g.channels) {
		return fmt.Errorf("executor: message on unknown channel %d", env.ch)
	}
	c := &g.channels[env.ch]
	if env.msg.Kind == KindBarrier {
		m := env.msg
		m.pos = c.taken
		return g.control(ctx, envelope{env.ch, m})
	}
	c.taken++
	if c.held() || len(c.queue) > 0 {
		c.queue = append(c.queue, env.msg)
		return nil
	}
	return g.deliver(ctx, env.ch, env.msg)
}

// control handles a message of the priority lane. New control kinds go
// here; they must not be data of any channel's stream.
func (g *gate) control(ctx context.Context, env envelope) error {
	if env.ch < 0 || env.ch >= len(g.channels) {
		return fmt.Errorf("executor: control message on unknown channel %d", env.ch)
	}
	switch env.msg.Kind {
	case KindBarrier:
		return g.announce(ctx, env.ch, env.msg.Barrier, env.msg.pos)
	default:
		return fmt.Errorf("executor: channel %d: message of kind %d on the priority lane", env.ch, env.msg.Kind)
	}
}

// deliverQueued delivers one message a channel holds queued and is free to
// deliver, taking channels in turn; it reports whether there was one.
func (g *gate) deliverQueued(ctx context.Context) (bool, error) {
	for k := range g.channels {
		i := (g.rr + k) % len(g.channels)
		c := &g.channels[i]
		if c.held() || len(c.queue) == 0 {
			continue
		}
		m := c.queue[0]
		c.queue[0] = Message{}
		c.queue = c.queue[1:]
		g.rr = i + 1
		return true, g.deliver(ctx, i, m)
	}
	return false, nil
}

// deliver hands one in-band message to the operator; a pending barrier
// whose place in the channel is right after it then takes effect.
func (g *gate) deliver(ctx context.Context, ch int, m Message) error {
	if err := g.process(ctx, ch, m); err != nil {
		return err
	}
	c := &g.channels[ch]
	c.delivered++
	if c.announced && !c.got && c.delivered == c.pos {
		return g.reach(ctx, ch)
	}
	return nil
}

func (g *gate) process(ctx context.Context, ch int, m Message) error {
	c := &g.channels[ch]
	switch m.Kind {
	case KindData:
		if g.unaligned && !c.got {
			// Sent before the barrier, processed after the snapshot: the
			// snapshot must carry it.
			if err := g.record(ch, m.Elems); err != nil {
				return err
			}
		}
		g.stats.in(m.Elems)
		if g.stats != nil && g.ports[c.port].Behind(c.in) {
			g.stats.late(m.Elems, g.ports[c.port].Input())
		}
		return g.op.Process(ctx, c.port, m.Elems)
	case KindWatermark:
		if g.unaligned && !c.got {
			c.flightWM = max(c.flightWM, m.Watermark)
		}
		if err := g.ports[c.port].Advance(c.in, m.Watermark); err != nil {
			return fmt.Errorf("executor: channel %d: %w", ch, err)
		}
		// A watermark counts an idle channel again.
		return g.statusChanged(ctx, c.port)
	case KindStatus:
		if g.unaligned && !c.got {
			c.flightIdle, c.flightActive = m.Status == watermarkmgr.StatusIdle, m.Status != watermarkmgr.StatusIdle
		}
		if err := g.ports[c.port].SetStatus(c.in, m.Status); err != nil {
			return fmt.Errorf("executor: channel %d: %w", ch, err)
		}
		return g.statusChanged(ctx, c.port)
	case KindProcessingTime:
		if g.unaligned && !c.got {
			c.flightPT = max(c.flightPT, m.Watermark)
		}
		if m.Watermark > c.pt {
			c.pt = m.Watermark
			return g.advanceProcTime(ctx)
		}
		return nil
	case KindEnd:
		if c.ended {
			return fmt.Errorf("executor: channel %d ended twice", ch)
		}
		c.ended = true
		if err := g.ports[c.port].End(c.in); err != nil {
			return fmt.Errorf("executor: channel %d: %w", ch, err)
		}
		g.live--
		if err := g.statusChanged(ctx, c.port); err != nil {
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
		return nil
	default:
		return fmt.Errorf("executor: channel %d: message of kind %d in the data lane", ch, m.Kind)
	}
}

// advance tells the operator of a port's new watermark, if it moved. The
// gate sets no holds and marks no channel idle, so it is the minimum over the
// port's channels that have not ended.
func (g *gate) advance(ctx context.Context, port int) error {
	wm, ok := g.ports[port].Emit()
	if !ok {
		return nil
	}
	if g.stats != nil {
		g.noteInputWatermark(port, wm)
	}
	return g.op.Watermark(ctx, port, wm)
}

// statusChanged follows a change of a channel's status, or its end, on
// port: the port's watermark may move (an idle channel leaves the
// minimum), and the subtask tells its consumers when it turns idle, every
// live input of every port being idle, or active again. Active goes out
// before the advance it allows; idle after whatever advance came first.
func (g *gate) statusChanged(ctx context.Context, port int) error {
	st := watermarkmgr.StatusOf(g.ports)
	if st == watermarkmgr.StatusActive && g.statusSent {
		if err := g.sendStatus(ctx, st); err != nil {
			return err
		}
	}
	if g.spread != nil {
		g.observeSpread()
	}
	if err := g.advance(ctx, port); err != nil {
		return err
	}
	if st == watermarkmgr.StatusIdle {
		return g.sendStatus(ctx, st)
	}
	return nil
}

// sendStatus tells the subtask's consumers its status once it changes.
// Consumers take every channel for active until told otherwise, so a
// subtask that never hears of idleness never sends one; a restored one
// sends its status whatever it is (restore.go).
func (g *gate) sendStatus(ctx context.Context, st watermarkmgr.Status) error {
	if g.status == st && g.statusSent {
		return nil
	}
	g.status, g.statusSent = st, true
	return g.out.Status(ctx, st)
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

// announce handles a barrier of channel ch, pos messages into the
// channel's stream. Aligned, it takes effect once everything before it was
// delivered (reach); unaligned, at once (overtake).
func (g *gate) announce(ctx context.Context, ch int, id BarrierID, pos uint64) error {
	if id <= g.last || (g.pending != 0 && id < g.pending) {
		// A checkpoint that is over (expired, or abandoned here for a
		// newer one): only one is in flight, so the newer one supersedes it.
		return nil
	}
	c := &g.channels[ch]
	abandoned := false
	if g.pending != 0 && id > g.pending {
		if c.announced {
			// Behind the pending barrier in this channel: it waits its turn.
			c.deferred = append(c.deferred, Message{Kind: KindBarrier, Barrier: id, pos: pos})
			return nil
		}
		// The pending checkpoint expired upstream before every channel
		// brought its barrier: drop it and release what it held back.
		g.abandon()
		abandoned = true
	}
	if g.pending == 0 {
		g.start(id)
	}
	if c.announced {
		return fmt.Errorf("executor: channel %d: barrier %d twice", ch, id)
	}
	if pos < c.delivered {
		return fmt.Errorf("executor: channel %d: barrier %d after message %d, but %d were delivered before it", ch, id, pos, c.delivered)
	}
	c.announced, c.pos = true, pos
	var err error
	switch {
	case !g.unaligned && g.canSwitch && !g.now().Before(g.switchAt):
		err = g.goUnaligned(ctx)
	case g.unaligned:
		err = g.overtake(ctx)
	case c.delivered == pos:
		err = g.reach(ctx, ch)
	default:
		// aligned: it waits for the data ahead of it
	}
	if err != nil || !abandoned {
		return err
	}
	return g.announceDeferred(ctx) // the abandoned one held them back
}

// announceDeferred announces the barriers that waited behind one that is
// over, in each channel's order.
func (g *gate) announceDeferred(ctx context.Context) error {
	for i := range g.channels {
		c := &g.channels[i]
		for len(c.deferred) > 0 && !c.announced {
			m := c.deferred[0]
			c.deferred = c.deferred[1:]
			if err := g.announce(ctx, i, m.Barrier, m.pos); err != nil {
				return err
			}
		}
	}
	return nil
}

// reach takes an aligned barrier into effect on channel ch: everything
// before it was delivered, so what follows is held back until the other
// channels' barriers take effect too.
func (g *gate) reach(ctx context.Context, ch int) error {
	c := &g.channels[ch]
	c.got = true
	c.blocked = !g.unaligned
	if !g.unaligned && g.canSwitch && !g.now().Before(g.switchAt) {
		return g.goUnaligned(ctx)
	}
	return g.maybeAligned(ctx)
}

func (g *gate) start(id BarrierID) {
	g.pending, g.arrival, g.unaligned, g.flight = id, g.now(), false, inFlight{}
	for i := range g.channels {
		c := &g.channels[i]
		c.flightWM, c.flightPT = mtime.MinTimestamp, mtime.MinTimestamp
		c.flightIdle, c.flightActive = false, false
	}
	g.canSwitch = false
	if g.cp != nil {
		g.switchAt, g.canSwitch = g.cp.SwitchAt(id)
	}
}

func (g *gate) abandon() {
	g.last, g.pending, g.unaligned, g.flight = g.pending, 0, false, inFlight{}
	g.clearBarrier()
}

// clearBarrier forgets the pending barrier on every channel and lets them
// all deliver again.
func (g *gate) clearBarrier() {
	for i := range g.channels {
		c := &g.channels[i]
		c.got, c.blocked, c.announced, c.pos = false, false, false, 0
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
// channel has delivered it. The data queued before the barriers that came
// already is in-flight data (overtake); what the channels whose barrier has
// not come yet deliver until it comes is processed as usual and also
// recorded as in-flight data, since the snapshot does not include it.
func (g *gate) goUnaligned(ctx context.Context) error {
	g.unaligned = true
	if err := g.snapshot(ctx); err != nil {
		return err
	}
	for i := range g.channels {
		g.channels[i].blocked = false
	}
	return g.overtake(ctx)
}

// overtake records, for every channel whose barrier came but has not taken
// effect, the data before the barrier that is not delivered yet as
// in-flight data, in the channel's order: what the gate holds queued, then
// what is still in the data lane, copied where it lies (scan). Everything
// before the barrier is in the lane already (see inbox), so this does not
// wait, and the data is then delivered as usual, not recorded again.
func (g *gate) overtake(ctx context.Context) error {
	for i := range g.channels {
		c := &g.channels[i]
		if !c.announced || c.got {
			continue
		}
		for _, m := range c.queue[:min(c.pos, c.taken)-c.delivered] {
			if err := g.overtook(i, m); err != nil {
				return err
			}
		}
		seq := c.taken
		var err error
		if seq < c.pos && g.scan != nil {
			g.scan(func(env envelope) bool {
				if env.ch != i || env.msg.Kind == KindBarrier {
					return true
				}
				if err = g.overtook(i, env.msg); err != nil {
					return false
				}
				seq++
				return seq < c.pos
			})
		}
		if err != nil {
			return err
		}
		if seq < c.pos {
			return fmt.Errorf("executor: channel %d: barrier %d after message %d, but only %d arrived",
				i, g.pending, c.pos, seq)
		}
		c.got, c.blocked = true, false
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
	g.marks = g.channelMarks(g.marks[:0])
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
	marks := slices.Clone(g.marks)
	for i := range marks {
		c := &g.channels[i]
		marks[i].InFlightWatermark, marks[i].InFlightProcessingTime = c.flightWM, c.flightPT
		marks[i].InFlightIdle, marks[i].InFlightActive = c.flightIdle, c.flightActive
	}
	rec := BarrierRecord{Node: g.node, Subtask: g.sub, ID: id, Arrival: g.arrival,
		Alignment: g.snapAt.Sub(g.arrival), Sync: g.sync, Unaligned: g.unaligned, InFlight: g.flight.buf,
		Watermarks: slices.Clone(g.watermarks), Channels: marks, State: g.state}
	g.last, g.pending, g.unaligned, g.flight = id, 0, false, inFlight{}
	g.ack(id)
	if g.cp != nil {
		g.cp.Done(rec)
	}
	g.clearBarrier()
	// What the channels held back is delivered by deliverQueued.
	return g.announceDeferred(ctx)
}

// noteInputWatermark records port's new watermark and the subtask's input
// watermark, the least over its ports.
func (g *gate) noteInputWatermark(port int, wm mtime.Time) {
	if g.portWM == nil {
		g.portWM = make([]mtime.Time, len(g.ports))
		for i := range g.portWM {
			g.portWM[i] = mtime.MinTimestamp
		}
	}
	g.portWM[port] = wm
	g.stats.inWM.Store(int64(slices.Min(g.portWM)))
}
