package fnapi

import (
	"context"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
)

// Streamed output.
//
// A bundle whose request sets Stream hands its output over as it arrives
// rather than at its end. The data stream's receive loop never waits for
// the caller: it appends each frame to the bundle's queue and goes on. A
// worker has one data stream for all its bundles, whatever their stage, so
// a receive loop that stopped for one bundle's slow consumer would stop
// every other bundle's output behind it, and that consumer may be waiting,
// through the graph, for one of those bundles to end: a deadlock. (Beam's
// Flink runner hands over the same way, into an unbounded queue, for the
// same reason.) The queue is bounded by its caller instead: Buffered
// reports what it holds, and the executor asks the SDK to checkpoint a
// bundle whose queue passes its bound (executor/split.go), which is what
// stops the SDK producing.
//
// Process hands the frames over on the caller's goroutine, in the order
// they arrived, while it waits for the bundle to end; Stream may block
// (downstream is full) without holding up anything but this bundle. A
// frame is as the SDK sent it and may end inside an element.

// outQueue is a streamed bundle's output not yet handed over.
type outQueue struct {
	ready chan struct{} // a token while frames wait

	mu     sync.Mutex
	frames []outFrame
	bytes  int // bytes in frames, and in the frame being handed over
}

type outFrame struct {
	sink string
	data []byte
}

func newOutQueue() *outQueue { return &outQueue{ready: make(chan struct{}, 1)} }

// push queues a frame; it never blocks.
func (q *outQueue) push(sink string, data []byte) {
	if len(data) == 0 {
		return
	}
	q.mu.Lock()
	q.frames = append(q.frames, outFrame{sink, data})
	q.bytes += len(data)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// size returns the bytes queued, the frame being handed over included.
func (q *outQueue) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes
}

// readyC is signalled when frames wait; nil for a bundle not streamed.
func (q *outQueue) readyC() <-chan struct{} {
	if q == nil {
		return nil
	}
	return q.ready
}

// handOver passes every queued frame to stream, oldest first. A frame
// counts as queued until stream returns, so Buffered includes the one
// downstream is slow to take.
func (q *outQueue) handOver(stream func(sink string, data []byte) error) error {
	if q == nil {
		return nil
	}
	for {
		q.mu.Lock()
		if len(q.frames) == 0 {
			q.mu.Unlock()
			return nil
		}
		f := q.frames[0]
		q.frames[0] = outFrame{}
		q.frames = q.frames[1:]
		q.mu.Unlock()
		err := stream(f.sink, f.data)
		q.mu.Lock()
		q.bytes -= len(f.data)
		q.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// await waits for the bundle's response on respc, or, when respc is nil,
// for the last frame of each of its outputs, handing streamed output over
// meanwhile.
func (b *bundle) await(ctx context.Context, w *Worker, respc <-chan *fnpb.InstructionResponse,
	stream func(string, []byte) error) (*fnpb.InstructionResponse, error) {
	done := b.done
	if respc != nil {
		done = nil
	}
	for {
		select {
		case resp := <-respc:
			return resp, nil
		case <-done:
			return nil, nil
		case <-b.out.readyC():
			select {
			case <-w.done: // lost: what it sent is not handed over now
				return nil, w.Err()
			default:
			}
			if err := b.out.handOver(stream); err != nil {
				return nil, err
			}
		case <-w.done:
			return nil, w.Err()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Queued returns the bytes of streamed output the worker's bundles hold
// that are not yet handed over.
func (w *Worker) Queued() int {
	w.mu.Lock()
	bundles := make([]*bundle, 0, len(w.mu.bundles))
	for _, b := range w.mu.bundles {
		bundles = append(bundles, b)
	}
	w.mu.Unlock()
	n := 0
	for _, b := range bundles {
		if b.out != nil {
			n += b.out.size()
		}
	}
	return n
}
