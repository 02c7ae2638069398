package executor

import "context"

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
// the snapshot (see gate.overtake). A new control message kind (a
// checkpoint-complete notice, say) goes through gate.control.
//
// The order is safe because a producer sends a barrier on the priority lane
// only after every message before it is in the data lane: when the
// consumer takes a data message, every barrier sent before it is already on
// the priority lane, and the consumer takes those first (take).
type inbox struct {
	data chan envelope
	prio chan envelope
	// head is a message taken from the data lane while the control
	// messages before it are handled: first in line for pull.
	head    envelope
	hasHead bool
}

// pump does one step of a subtask's input without waiting: a control
// message if one waits, else one message the gate holds ready (held back
// by an alignment, or taken early by an unaligned barrier). It reports
// whether it did anything. The data lane is left to the subtask's select,
// so timers are not starved by a full inbox; what the gate holds is bounded.
func (in *inbox) pump(ctx context.Context, gt *gate) (bool, error) {
	select {
	case env := <-in.prio:
		return true, gt.control(ctx, env)
	default:
	}
	return gt.deliverQueued(ctx)
}

// take hands the gate a message of the data lane, after every control
// message waiting: a barrier sent before env must take effect before it.
func (in *inbox) take(ctx context.Context, gt *gate, env envelope) error {
	in.head, in.hasHead = env, true
	for {
		select {
		case p := <-in.prio:
			if err := gt.control(ctx, p); err != nil {
				return err
			}
		default:
			if !in.hasHead { // an overtaking barrier pulled it
				return nil
			}
			env := in.head
			in.head, in.hasHead = envelope{}, false
			return gt.handle(ctx, env)
		}
	}
}

// pull takes the next message of the data lane without waiting, for a
// barrier that overtakes queued data.
func (in *inbox) pull() (envelope, bool) {
	if in.hasHead {
		env := in.head
		in.head, in.hasHead = envelope{}, false
		return env, true
	}
	select {
	case env := <-in.data:
		return env, true
	default:
		return envelope{}, false
	}
}

// send puts an in-band message on channel i of the edge, counting it so
// that a later barrier knows its position.
func (e *edgeOut) send(ctx context.Context, i int, m Message) error {
	for len(e.sent) < len(e.to) {
		e.sent = append(e.sent, 0)
	}
	if err := send(ctx, e.to[i], envelope{e.chIdx[i], m}); err != nil {
		return err
	}
	e.sent[i]++
	return nil
}

// sendBarrier puts a barrier on channel i of the edge: on the consumer's
// priority lane with its position, or in-band where the edge has no
// priority lane (an edge built by hand in a test).
func (e *edgeOut) sendBarrier(ctx context.Context, i int, id BarrierID) error {
	m := Message{Kind: KindBarrier, Barrier: id}
	if i >= len(e.prio) || e.prio[i] == nil {
		return send(ctx, e.to[i], envelope{e.chIdx[i], m})
	}
	if i < len(e.sent) {
		m.pos = e.sent[i]
	}
	return send(ctx, e.prio[i], envelope{e.chIdx[i], m})
}
