package executor

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/cespare/xxhash/v2"

	"github.com/weir-runner/weir/watermarkmgr"
	"github.com/weir-runner/weir/wire"
)

// Partition says how an edge spreads elements over consumer subtasks.
type Partition int

// Partitions.
const (
	Forward   Partition = iota // whole batches, round robin
	Hash                       // by key group of each element's key
	Broadcast                  // every element to every subtask
)

// KeyGroups is the number of key groups keys hash into. A consumer subtask
// owns a contiguous range of them.
const KeyGroups = 128

// KeyFunc returns the key bytes of an encoded element.
type KeyFunc func(elem []byte) ([]byte, error)

// KeyGroup returns the key group of a key.
//
// The hash must be the same in every process and every Go release: key
// groups are in the store's keys and in checkpoints, and a restored job
// finds its state by them. (It was maphash with a per-process seed, and a
// restarted job looked for its windows under other key groups: the crash
// test saw windows fire twice, each with part of the values.)
func KeyGroup(key []byte) int { return int(xxhash.Sum64(key) % KeyGroups) }

// subtaskFor maps a key group to the subtask that owns it.
func subtaskFor(group, parallelism int) int { return group * parallelism / KeyGroups }

// edgeOut is one edge as a producer subtask sees it.
type edgeOut struct {
	part  Partition
	key   KeyFunc
	lanes []*lane         // consumer subtasks' data lanes
	to    []chan envelope // instead of lanes, in tests of operators
	prio  []chan envelope // consumers' priority lanes, for barriers
	chIdx []int           // this producer's channel index at each consumer
	sent  []uint64        // in-band messages sent to each consumer
	next  int             // round-robin cursor
	wmSeq []uint64        // each lane's sequence number of the last watermark sent on it
	name  string
	// backpressured, if set, adds up the producer's time waiting for room
	// in a consumer's queue.
	backpressured *atomic.Int64
}

// Output is a subtask's outputs: per output port, the edges leaving it.
type Output struct {
	ports [][]*edgeOut
	// buckets is scratch space for hash partitioning.
	buckets [][][]byte
	// arrivals, if set, records the arrival delay of what is emitted, by
	// the wall clock or, once a TestStream drives it, by synthetic time.
	arrivals  *TransformLate
	synthetic bool
	pt        mtime.Time
	stats     *subtaskStats // nil for an Output built by hand in a test
	// ann, once the subtask has said its status, holds back watermarks
	// while it is idle (Status).
	ann *watermarkmgr.Announcer
}

// Keeps reports whether Emit on port may hand the elems slice itself
// downstream. When it does not (every edge hash-partitions into buckets
// of its own), the caller may reuse the slice once Emit returns.
func (o *Output) Keeps(port int) bool {
	if port < 0 || port >= len(o.ports) {
		return true
	}
	for _, e := range o.ports[port] {
		if e.part != Hash || e.consumers() == 1 {
			return true
		}
	}
	return false
}

// Emit sends elements to every edge of output port.
func (o *Output) Emit(ctx context.Context, port int, elems [][]byte) error {
	if len(elems) == 0 {
		return nil
	}
	if port < 0 || port >= len(o.ports) {
		return fmt.Errorf("executor: emit to output %d of %d", port, len(o.ports))
	}
	if o.arrivals != nil {
		o.observe(elems)
	}
	o.stats.out(elems)
	for _, e := range o.ports[port] {
		if err := o.emitEdge(ctx, e, elems); err != nil {
			return err
		}
	}
	return nil
}

func (o *Output) emitEdge(ctx context.Context, e *edgeOut, elems [][]byte) error {
	switch e.part {
	case Broadcast:
		for i := range e.consumers() {
			if err := e.send(ctx, i, Message{Kind: KindData, Elems: elems}); err != nil {
				return err
			}
		}
		return nil
	case Hash:
		if e.consumers() == 1 {
			return e.send(ctx, 0, Message{Kind: KindData, Elems: elems})
		}
		if cap(o.buckets) < e.consumers() {
			o.buckets = make([][][]byte, e.consumers())
		}
		b := o.buckets[:e.consumers()]
		// Each bucket goes to its consumer, so each is new: sized for an
		// even share and a little more, it is not grown and copied twice
		// over on the way (a third of the runner's allocation on a
		// shuffle of small values).
		share := len(elems)/e.consumers() + len(elems)/(4*e.consumers()) + 1
		for _, el := range elems {
			k, err := e.key(el)
			if err != nil {
				return fmt.Errorf("executor: edge %s: %w", e.name, err)
			}
			i := subtaskFor(KeyGroup(k), e.consumers())
			if b[i] == nil {
				b[i] = make([][]byte, 0, share)
			}
			b[i] = append(b[i], el)
		}
		for i := range b {
			if len(b[i]) > 0 {
				if err := e.send(ctx, i, Message{Kind: KindData, Elems: b[i]}); err != nil {
					return err
				}
			}
			b[i] = nil
		}
		return nil
	default:
		i := e.next % e.consumers()
		e.next++
		return e.send(ctx, i, Message{Kind: KindData, Elems: elems})
	}
}

// WatermarkQueued reports whether a consumer has not yet taken the last
// watermark the subtask sent it: the consumer is behind by at least the
// data sent since. A source whose watermark is a heuristic may then hold a
// new advance back (Kafka's coalesce_watermarks), so that a consumer that
// is behind gets one advance per lane of data instead of one per batch;
// what is held back goes out once the queued one is taken, so the
// consumer's watermark lags by at most the data its lane holds.
func (o *Output) WatermarkQueued() bool {
	for _, port := range o.ports {
		for _, e := range port {
			for i, seq := range e.wmSeq {
				if seq > 0 && e.lanes[i].popped.Load() < seq {
					return true
				}
			}
		}
	}
	return false
}

// Watermark sends wm on every channel. While the subtask is idle
// (Status) it sends nothing: wm follows the next Active.
func (o *Output) Watermark(ctx context.Context, wm mtime.Time) error {
	if o.stats != nil {
		o.stats.outWM.Store(int64(wm))
	}
	if o.ann != nil && !o.ann.Watermark(wm) {
		return nil
	}
	return o.broadcast(ctx, Message{Kind: KindWatermark, Watermark: wm})
}

// Status tells every consumer the subtask's watermark status when it
// changes, and the first time whatever it is (watermarkmgr.Announcer):
// idle, its channels leave their consumers' minimum, and the subtask
// sends no watermark until it says active again, when the newest one it
// held back follows. A source whose splits are all idle, or that has
// none, says idle; the executor says it for a subtask whose inputs are
// all idle.
func (o *Output) Status(ctx context.Context, st watermarkmgr.Status) error {
	if o.ann == nil {
		o.ann = watermarkmgr.NewAnnouncer()
	}
	send, wm, ok := o.ann.SetStatus(st)
	if !send {
		return nil
	}
	if o.stats != nil {
		o.stats.outIdle.Store(st == watermarkmgr.StatusIdle)
	}
	if err := o.broadcast(ctx, Message{Kind: KindStatus, Status: st}); err != nil {
		return err
	}
	if !ok {
		return nil
	}
	return o.broadcast(ctx, Message{Kind: KindWatermark, Watermark: wm})
}

// ProcessingTime sends a synthetic processing time on every channel.
func (o *Output) ProcessingTime(ctx context.Context, t mtime.Time) error {
	o.synthetic, o.pt = true, t
	return o.broadcast(ctx, Message{Kind: KindProcessingTime, Watermark: t})
}

// barrier sends a barrier on every channel, ahead of the data queued there
// (see inbox).
func (o *Output) barrier(ctx context.Context, id BarrierID) error {
	for _, port := range o.ports {
		for _, e := range port {
			for i := range e.consumers() {
				if err := e.sendBarrier(ctx, i, id); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (o *Output) end(ctx context.Context) error {
	return o.broadcast(ctx, Message{Kind: KindEnd})
}

func (o *Output) broadcast(ctx context.Context, m Message) error {
	for _, port := range o.ports {
		for _, e := range port {
			for i := range e.consumers() {
				if err := e.send(ctx, i, m); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func send(ctx context.Context, to chan envelope, env envelope) error {
	select {
	case to <- env:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// observe records the arrival delays of emitted elements.
func (o *Output) observe(elems [][]byte) {
	now := o.pt
	if !o.synthetic {
		now = mtime.FromTime(time.Now())
	}
	for _, e := range elems {
		if len(e) >= 8 {
			o.arrivals.arrival(wire.DecodeTime(e), now)
		}
	}
}
