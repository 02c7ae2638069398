package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/wire"
)

// Streamed bundle output.
//
// Buffered (the default), a bundle's output goes downstream once the
// bundle has finished, with its state changes and timers: a bundle lost
// with its worker is retried from its retained input, and nothing of it
// was seen. Streamed (SDKStageSpec.StreamOutput), the output goes
// downstream as the SDK sends it, in batches, through the stage's Output,
// which blocks while downstream is full; state changes, timers and
// residuals still wait for the bundle's end. Downstream sees elements of
// a long bundle (an SDF reading a source) while it runs, and the runner
// no longer holds a bundle's whole output.
//
// Checkpoints are unchanged: a barrier waits for the bundle in flight to
// end, as buffered, so all of a bundle's output is ahead of the barrier on
// every channel, and an unaligned snapshot downstream records the part it
// had not processed as in-flight data.
//
// The price is the retry. A bundle lost after some of its output went
// downstream cannot run again without repeating that output (a
// group-by-key would count it twice), so the stage fails with
// ErrOutputLeft instead; the runner then restarts the job from its last
// checkpoint, or fails it when it takes none. A bundle lost before any
// output left is retried as buffered.
//
// A bundle whose output the runner might drop streams nothing: the
// producer of a combine whose form (lifted or not) is undecided.

// ErrOutputLeft marks the failure of a streamed bundle lost with its
// worker after some of its output went downstream: it is not retried.
var ErrOutputLeft = errors.New("executor: part of the lost bundle's output had gone downstream")

// streamAll streams the output of every SDK stage, whatever its spec
// says: the package's tests set it from WEIR_TEST_STREAM_BUNDLE_OUTPUT=on
// to run all of them in streamed mode (export_test.go).
var streamAll bool

// streams reports whether the stage's next bundle streams its output.
// Call it before descriptor: a combine decided after the bundle picked
// its descriptor must not find it streamed (unlift.go).
func (s *SDKStage) streams() bool {
	if !s.Spec.StreamOutput && !streamAll {
		return false
	}
	us := s.Spec.Unlift
	return us == nil || !us.Producer || us.Switch.mode.Load() != unliftUndecided
}

// outStream takes one attempt of a streamed bundle's output, or a
// buffered bundle's when it commits, frame by frame, cuts it into
// elements (a frame may end inside one) and emits them in batches of up
// to emitBatch. mu, if set, serialises the emits of
// bundles that run at once (split.go).
type outStream struct {
	ctx   context.Context
	s     *SDKStage
	mu    *sync.Mutex
	ports map[string]int
	// part holds, per output port, the start of an element cut off at
	// the end of the last frame.
	part [][]byte
	// left says some output went downstream (or may have: an emit that
	// failed half way); sent counts the elements emitted.
	left bool
	sent int
	// scratch holds, per output port whose edges all copy what they are
	// given (Output.Keeps), the batch slice to cut the next frame into;
	// nil for a port whose batches go downstream as they are.
	scratch [][][]byte
}

func (s *SDKStage) newOutStream(ctx context.Context, sinks []string, mu *sync.Mutex) *outStream {
	o := &outStream{ctx: ctx, s: s, mu: mu, ports: make(map[string]int, len(sinks)), part: make([][]byte, len(sinks)),
		scratch: make([][][]byte, len(sinks))}
	for i, sink := range sinks {
		o.ports[sink] = i
		if !s.Out.Keeps(i) {
			// A batch per element would be the stage's largest garbage
			// (24 bytes per element) on a shuffle of small values.
			o.scratch[i] = make([][]byte, 0, emitBatch)
		}
	}
	return o
}

// take implements fnapi.BundleRequest.Stream.
func (o *outStream) take(sink string, data []byte) error {
	port, ok := o.ports[sink]
	if !ok {
		return fmt.Errorf("stage %s: output for unknown sink %s", o.s.Spec.Name, sink)
	}
	c := o.s.Spec.SinkCodecs[port]
	batch := o.newBatch(port, len(data))
	if len(o.part[port]) > 0 {
		elem, rest, err := complete(c, o.part[port], data)
		if err != nil {
			return fmt.Errorf("stage %s: output %s: %w", o.s.Spec.Name, sink, err)
		}
		if elem == nil {
			o.part[port] = rest // still not whole
			return nil
		}
		o.part[port] = nil
		batch, data = append(batch, elem), rest
	}
	for len(data) > 0 {
		n, err := c.Measure(data)
		if errors.Is(err, wire.ErrShort) {
			// The rest comes in the next frame. Capacity cut to length,
			// so completing it copies instead of writing past the frame.
			o.part[port] = data[:len(data):len(data)]
			break
		}
		if err != nil {
			return fmt.Errorf("stage %s: output %s: %w", o.s.Spec.Name, sink, err)
		}
		batch, data = append(batch, data[:n:n]), data[n:]
		if len(batch) == emitBatch {
			if err := o.emit(port, batch); err != nil {
				return err
			}
			batch = o.newBatch(port, len(data))
		}
	}
	return o.emit(port, batch)
}

// newBatch returns an empty batch for port, for a frame of n bytes left:
// its scratch slice when its edges copy, else a new one.
func (o *outStream) newBatch(port, n int) [][]byte {
	if o.scratch[port] != nil {
		return o.scratch[port][:0]
	}
	return make([][]byte, 0, min(emitBatch, n/16+1))
}

func (o *outStream) emit(port int, batch [][]byte) error {
	if len(batch) == 0 {
		return nil
	}
	if o.mu != nil {
		o.mu.Lock()
		defer o.mu.Unlock()
	}
	o.left = true
	if err := o.s.Out.Emit(o.ctx, port, batch); err != nil {
		return fmt.Errorf("stage %s: output %d: %w", o.s.Spec.Name, port, err)
	}
	o.sent += len(batch)
	return nil
}

// end checks, once the bundle finished, that no output ended inside an
// element.
func (o *outStream) end() error {
	for port, p := range o.part {
		if len(p) > 0 {
			return fmt.Errorf("stage %s: output %s ends with %d bytes of an element cut off: %w",
				o.s.Spec.Name, o.s.Spec.Sinks[port], len(p), wire.ErrShort)
		}
	}
	return nil
}

// complete finishes the element whose start is part with the first bytes
// of data. It returns the element and what of data follows it, or, when
// data does not finish it either, nil and part with data appended. The
// bytes of data are copied a few at a time, doubling, so finishing a
// small element does not copy a whole frame.
func complete(c *wire.Codec, part, data []byte) (elem, rest []byte, err error) {
	had, used, step := len(part), 0, max(len(part), 64)
	for {
		n, err := c.Measure(part)
		switch {
		case err == nil:
			// part held less than one element before, so n > had.
			return part[:n:n], data[n-had:], nil
		case !errors.Is(err, wire.ErrShort):
			return nil, nil, err
		case used == len(data):
			return nil, part, nil
		}
		k := min(step, len(data)-used)
		part = append(part, data[used:used+k]...)
		used, step = used+k, 2*step
	}
}

// lostAfterOutput is the error of a streamed bundle lost with its worker
// (err) after output went downstream.
func (s *SDKStage) lostAfterOutput(err error, out *outStream, w *fnapi.Worker) error {
	return fmt.Errorf("stage %s: bundle lost with its worker after %d elements of its output went downstream; "+
		"running it again would repeat them: %w: %w; worker's last log lines:\n%s",
		s.Spec.Name, out.sent, ErrOutputLeft, err, joinLines(w.LastLogs()))
}
