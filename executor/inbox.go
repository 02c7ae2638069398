package executor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A subtask's input has two lanes.
//
// The data lane is one FIFO channel shared by all the subtask's input
// channels: data, watermarks, processing-time advances and ends, in the
// order each producer sent them. It is bounded (Graph.InboxSize), which is
// what backpressure is.
//
// The priority lane carries control messages that must not wait behind
// queued data: today barriers. A barrier carries its position in its
// channel's stream (Message.pos: the messages its producer had sent on that
// channel before it), so the gate still knows which queued data came before
// it. An aligned barrier takes effect only once everything before it on its
// channel was processed, as if it had come in-band; an unaligned one takes
// effect at once, and the data queued before it becomes in-flight data of
// the snapshot, copied where it lies (see gate.overtake). A new control message kind (a
// checkpoint-complete notice, say) goes through gate.control.
//
// The order is safe because a producer sends a barrier on the priority lane
// only after every message before it is in the data lane: when the
// consumer takes a data message, every barrier sent before it is already on
// the priority lane, and the consumer takes those first (take).
type inbox struct {
	data *lane
	prio chan envelope
	// head is a message taken from the data lane while the control
	// messages before it are handled: still first in line for scan.
	head    envelope
	hasHead bool
}

// lane is a bounded FIFO of envelopes, like a buffered channel, that the
// consumer can also read without taking (scan): an unaligned barrier
// records the data it overtakes where it lies, so the data keeps flowing
// at the consumer's pace and the producers are not held up longer than
// without the checkpoint.
type lane struct {
	slots chan struct{} // a token per queued envelope: push waits while full
	ready chan struct{} // signalled after each push
	mu    sync.Mutex
	items []envelope
	// pushed counts envelopes put on the lane (under mu); popped, those
	// taken off it. A producer that remembers pushed after its push knows
	// the envelope was taken once popped reaches it (Output.WatermarkQueued).
	pushed uint64
	popped atomic.Uint64
}

func newLane(size int) *lane {
	return &lane{slots: make(chan struct{}, size), ready: make(chan struct{}, 1)}
}

// push puts env on the lane, waiting while it is full, and returns its
// sequence number.
func (l *lane) push(ctx context.Context, env envelope, backpressured *atomic.Int64) (uint64, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		// Full: the wait is backpressure. The clock is read only here,
		// so a producer that is not held up pays nothing for the count.
		since := time.Now()
		select {
		case l.slots <- struct{}{}:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if backpressured != nil {
			waited(backpressured, since)
		}
	}
	l.mu.Lock()
	l.items = append(l.items, env)
	l.pushed++
	seq := l.pushed
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
	return seq, nil
}

func (l *lane) pop() (envelope, bool) {
	l.mu.Lock()
	if len(l.items) == 0 {
		l.mu.Unlock()
		return envelope{}, false
	}
	env := l.items[0]
	l.items[0] = envelope{}
	l.items = l.items[1:]
	l.popped.Add(1)
	l.mu.Unlock()
	<-l.slots
	return env, true
}

// pump does one step of a subtask's input without waiting: a control
// message if one waits, else one message the gate holds ready (held back
// by an alignment or behind a later barrier). It reports whether it did
// anything. The data lane is left to the subtask's loop, so that timers
// come first; what the gate holds is bounded.
func (in *inbox) pump(ctx context.Context, gt *gate) (bool, error) {
	select {
	case env := <-in.prio:
		return true, gt.control(ctx, env)
	default:
	}
	return gt.deliverQueued(ctx)
}

// next takes one message of the data lane if there is one and hands it to
// the gate (take).
func (in *inbox) next(ctx context.Context, gt *gate) (bool, error) {
	env, ok := in.data.pop()
	if !ok {
		return false, nil
	}
	return true, in.take(ctx, gt, env)
}

// take hands the gate a message of the data lane, after every control
// message waiting: a barrier sent before env must take effect before it.
func (in *inbox) take(ctx context.Context, gt *gate, env envelope) error {
	in.head, in.hasHead = env, true
	defer func() { in.head, in.hasHead = envelope{}, false }()
	for {
		select {
		case p := <-in.prio:
			if err := gt.control(ctx, p); err != nil {
				return err
			}
		default:
			in.head, in.hasHead = envelope{}, false
			return gt.handle(ctx, env)
		}
	}
}

// scan calls fn with the messages of the data lane not yet handed to the
// gate, in order, without taking them, until fn returns false.
func (in *inbox) scan(fn func(envelope) bool) {
	if in.hasHead && !fn(in.head) {
		return
	}
	in.data.mu.Lock()
	defer in.data.mu.Unlock()
	for _, env := range in.data.items {
		if !fn(env) {
			return
		}
	}
}

// send puts an in-band message on channel i of the edge, counting it so
// that a later barrier knows its position. An edge built by hand in a test
// has plain channels (to) instead of lanes.
func (e *edgeOut) send(ctx context.Context, i int, m Message) error {
	for len(e.sent) < len(e.to)+len(e.lanes) {
		e.sent = append(e.sent, 0)
	}
	env := envelope{e.chIdx[i], m}
	var err error
	if i < len(e.lanes) {
		var seq uint64
		seq, err = e.lanes[i].push(ctx, env, e.backpressured)
		if m.Kind == KindWatermark && err == nil {
			for len(e.wmSeq) <= i {
				e.wmSeq = append(e.wmSeq, 0)
			}
			e.wmSeq[i] = seq
		}
	} else {
		err = send(ctx, e.to[i], env)
	}
	if err != nil {
		return err
	}
	if m.Kind != KindBarrier {
		e.sent[i]++
	}
	return nil
}

// consumers is the number of consumer subtasks of the edge.
func (e *edgeOut) consumers() int { return max(len(e.lanes), len(e.to)) }

// sendBarrier puts a barrier on channel i of the edge: on the consumer's
// priority lane with its position, or in-band where the edge has no
// priority lane (an edge built by hand in a test).
func (e *edgeOut) sendBarrier(ctx context.Context, i int, id BarrierID) error {
	m := Message{Kind: KindBarrier, Barrier: id}
	if i >= len(e.prio) || e.prio[i] == nil {
		return e.send(ctx, i, m) // in-band; the gate does not count it
	}
	if i < len(e.sent) {
		m.pos = e.sent[i]
	}
	return send(ctx, e.prio[i], envelope{e.chIdx[i], m})
}
