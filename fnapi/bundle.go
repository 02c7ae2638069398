package fnapi

import (
	"context"
	"fmt"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
)

// StateHandler answers a bundle's state requests (side inputs, user state).
type StateHandler interface {
	HandleState(req *fnpb.StateRequest) (*fnpb.StateResponse, error)
}

// Input is data for one of a descriptor's source transforms.
type Input struct {
	TransformID string
	// Elements are encoded with the source's wire coder.
	Elements [][]byte
}

// TimerFamily names the timer family of a transform.
type TimerFamily struct {
	TransformID string
	FamilyID    string
}

// TimerInput is the timers of one family fired in a bundle, encoded and
// concatenated (possibly none).
type TimerInput struct {
	TimerFamily
	Timers []byte
}

// BundleRequest is one bundle to run.
type BundleRequest struct {
	DescriptorID string
	Inputs       []Input
	// Outputs lists the descriptor's sink transforms; Process waits for the
	// last frame of each.
	Outputs []string
	// Timers are sent after the inputs, one entry for every timer family of
	// the descriptor's stateful transforms, even when it fires nothing: the
	// SDK answers each family it hears of with the timers the bundle set,
	// and Process waits for all of them.
	Timers []TimerInput
	State  StateHandler
	// OnSent, when set, is called with the bundle's instruction id once
	// the request and all its input are sent, so the caller may Split it.
	OnSent func(instruction string)
	// Stream, when set, takes the bundle's output as it arrives, and
	// BundleResult.Outputs stays empty (see stream.go).
	Stream func(sink string, data []byte) error
	// OutputLimit and OnOutputLimit, when both set, make the data stream's
	// receive loop call OnOutputLimit after each frame that leaves the
	// bundle holding OutputLimit bytes of output or more not yet handed
	// over (Buffered), so that the caller can checkpoint it at once instead
	// of at its next look, while a fast SDK produces on. OnOutputLimit must
	// not block: every bundle's output waits behind it.
	OutputLimit   int
	OnOutputLimit func()
}

// BundleResult is what a successful bundle produced.
type BundleResult struct {
	// Instruction names the bundle for FinalizeBundle.
	Instruction string
	// Outputs maps each sink transform to its elements, concatenated, in
	// the frames they came in.
	Outputs map[string]Frames
	// Timers maps each timer family to the timers the bundle set or
	// cleared, encoded and concatenated.
	Timers   map[TimerFamily][]byte
	Response *fnpb.ProcessBundleResponse
}

// BundleError is a bundle the SDK reported as failed.
type BundleError struct {
	Instruction string
	Message     string
}

func (e *BundleError) Error() string {
	return fmt.Sprintf("bundle %s failed in the SDK: %s", e.Instruction, e.Message)
}

// maxFrame bounds the bytes of input sent in one data frame: about the
// Go SDK's own data chunks (4 MB), and with room under gRPC's default
// 4 MiB message limit for an SDK that keeps it. Large frames let a worker
// queue more of a bundle's input (the Go SDK's data channel holds a fixed
// number of frames), which also spaces out a Go worker's garbage
// collections. An element larger than this goes in a frame of its own.
const maxFrame = 4<<20 - 64<<10

type bundle struct {
	id    string
	state StateHandler

	mu      sync.Mutex
	outputs map[string]*frames
	timers  map[TimerFamily]*frames
	waiting int // sinks and timer families whose last frame has not arrived
	err     error
	closed  bool
	done    chan struct{} // closed when all sinks finished or on failure
	// out queues the output of a streamed bundle (BundleRequest.Stream)
	// until Process hands it over; nil for a bundle that is not.
	out *outQueue
	// limit and onLimit are the request's OutputLimit and OnOutputLimit.
	limit   int
	onLimit func()
}

func (b *bundle) receive(d *fnpb.Elements_Data) {
	b.mu.Lock()
	defer b.mu.Unlock()
	buf, ok := b.outputs[d.GetTransformId()]
	if !ok {
		b.failLocked(fmt.Errorf("fnapi: bundle %s: data for unknown output %q", b.id, d.GetTransformId()))
		return
	}
	if b.out != nil {
		b.out.push(d.GetTransformId(), d.GetData())
	} else {
		buf.add(d.GetData())
	}
	if b.onLimit != nil && len(d.GetData()) > 0 && b.heldLocked() >= b.limit {
		b.onLimit()
	}
	if d.GetIsLast() {
		b.lastLocked()
	}
}

// heldLocked returns the bundle's output bytes not yet handed over.
func (b *bundle) heldLocked() int {
	if b.out != nil {
		return b.out.size()
	}
	n := 0
	for _, o := range b.outputs {
		n += o.n
	}
	return n
}

// lastLocked counts one output stream (a sink or a timer family) ended; the
// bundle is done with the last of them.
func (b *bundle) lastLocked() {
	b.waiting--
	if b.waiting == 0 {
		b.closeLocked()
	}
}

func (b *bundle) receiveTimers(t *fnpb.Elements_Timers) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := TimerFamily{t.GetTransformId(), t.GetTimerFamilyId()}
	buf, ok := b.timers[f]
	if !ok {
		b.failLocked(fmt.Errorf("fnapi: bundle %s: timers for unknown family %q of transform %s", b.id, f.FamilyID, f.TransformID))
		return
	}
	buf.add(t.GetTimers())
	if t.GetIsLast() {
		b.lastLocked()
	}
}

func (b *bundle) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failLocked(err)
}

func (b *bundle) failLocked(err error) {
	if b.err == nil {
		b.err = err
	}
	b.closeLocked()
}

func (b *bundle) closeLocked() {
	if !b.closed {
		b.closed = true
		close(b.done)
	}
}

// Process runs one bundle on the worker and returns its outputs. The input is
// not modified, so a caller may retry it after ErrWorkerLost.
func (w *Worker) Process(ctx context.Context, req BundleRequest) (*BundleResult, error) {
	id := w.newInstructionID()
	b := &bundle{id: id, state: req.State, outputs: map[string]*frames{},
		timers:  map[TimerFamily]*frames{},
		waiting: len(req.Outputs) + len(req.Timers), done: make(chan struct{})}
	for _, o := range req.Outputs {
		b.outputs[o] = &frames{}
	}
	for _, t := range req.Timers {
		b.timers[t.TimerFamily] = &frames{}
	}
	if b.waiting == 0 {
		b.closeLocked()
	}
	if req.Stream != nil {
		b.out = newOutQueue()
	}
	if req.OutputLimit > 0 && req.OnOutputLimit != nil {
		b.limit, b.onLimit = req.OutputLimit, req.OnOutputLimit
	}
	w.mu.Lock()
	if err := w.mu.err; err != nil {
		w.mu.Unlock()
		return nil, err
	}
	w.mu.bundles[id] = b
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.mu.bundles, id)
		w.mu.Unlock()
	}()

	respc, err := w.instruct(&fnpb.InstructionRequest{InstructionId: id,
		Request: &fnpb.InstructionRequest_ProcessBundle{ProcessBundle: &fnpb.ProcessBundleRequest{
			ProcessBundleDescriptorId: req.DescriptorID}}})
	if err != nil {
		return nil, err
	}
	// The SDK opens its data stream when a bundle first needs it. One that
	// fails before that (a descriptor it cannot build) answers at once and
	// never opens it, so wait for whichever comes first.
	var resp *fnpb.InstructionResponse
	select {
	case <-w.dataUp:
	case resp = <-respc:
	case <-w.done:
		return nil, w.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if resp == nil {
		if err := w.sendInputs(id, req.Inputs); err != nil {
			return nil, err
		}
		if err := w.sendTimers(id, req.Timers); err != nil {
			return nil, err
		}
		if err := w.sendEnd(id, req.Inputs, req.Timers); err != nil {
			return nil, err
		}
		if req.OnSent != nil {
			req.OnSent(id)
		}
		var err error
		if resp, err = b.await(ctx, w, respc, req.Stream); err != nil {
			return nil, err
		}
	}
	if msg := resp.GetError(); msg != "" {
		return nil, &BundleError{Instruction: id, Message: msg}
	}
	if _, err := b.await(ctx, w, nil, req.Stream); err != nil {
		return nil, err
	}
	if err := b.out.handOver(req.Stream); err != nil {
		return nil, err // what came before the last frame
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return nil, b.err
	}
	res := &BundleResult{Instruction: id, Outputs: make(map[string]Frames, len(b.outputs)), Response: resp.GetProcessBundle()}
	for k, v := range b.outputs {
		res.Outputs[k] = v.parts
	}
	if len(b.timers) > 0 {
		res.Timers = make(map[TimerFamily][]byte, len(b.timers))
		for k, v := range b.timers {
			res.Timers[k] = v.parts.Bytes()
		}
	}
	return res, nil
}

// sendInputs streams each input in frames of up to maxFrame bytes. No
// frame carries is_last: the end of every stream goes in one message of
// its own (sendEnd), because Python's harness treats an element marked
// is_last as the end mark alone and drops the data it carries.
func (w *Worker) sendInputs(id string, inputs []Input) error {
	for _, in := range inputs {
		els := in.Elements
		for len(els) > 0 {
			n, size := nextFrame(els)
			buf := make([]byte, 0, size)
			for _, e := range els[:n] {
				buf = append(buf, e...)
			}
			els = els[n:]
			if err := w.sendData(&fnpb.Elements{Data: []*fnpb.Elements_Data{{
				InstructionId: id, TransformId: in.TransformID, Data: buf}}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// sendTimers sends the fired timers of every family that fired any in one
// message; the families' end marks follow in sendEnd.
func (w *Worker) sendTimers(id string, timers []TimerInput) error {
	msg := &fnpb.Elements{}
	for _, t := range timers {
		if len(t.Timers) == 0 {
			continue
		}
		msg.Timers = append(msg.Timers, &fnpb.Elements_Timers{InstructionId: id, TransformId: t.TransformID,
			TimerFamilyId: t.FamilyID, Timers: t.Timers})
	}
	if len(msg.Timers) == 0 {
		return nil
	}
	return w.sendData(msg)
}

// sendEnd ends every input stream and every timer family of the bundle in
// one message. Each family gets its own end mark, as Python's and Java's
// harnesses wait for one per (transform, family); the Go harness counts
// one per transform and takes the extra marks of the same message as
// already done.
func (w *Worker) sendEnd(id string, inputs []Input, timers []TimerInput) error {
	msg := &fnpb.Elements{}
	for _, in := range inputs {
		msg.Data = append(msg.Data, &fnpb.Elements_Data{InstructionId: id, TransformId: in.TransformID, IsLast: true})
	}
	for _, t := range timers {
		msg.Timers = append(msg.Timers, &fnpb.Elements_Timers{InstructionId: id, TransformId: t.TransformID,
			TimerFamilyId: t.FamilyID, IsLast: true})
	}
	return w.sendData(msg)
}

// Finalize asks the worker to run the finalization callbacks of a bundle
// whose results the runner has committed.
func (w *Worker) Finalize(ctx context.Context, instruction string) error {
	respc, err := w.instruct(&fnpb.InstructionRequest{InstructionId: w.newInstructionID(),
		Request: &fnpb.InstructionRequest_FinalizeBundle{FinalizeBundle: &fnpb.FinalizeBundleRequest{
			InstructionId: instruction}}})
	if err != nil {
		return err
	}
	select {
	case resp := <-respc:
		if msg := resp.GetError(); msg != "" {
			return fmt.Errorf("fnapi: finalize bundle %s: %s", instruction, msg)
		}
		return nil
	case <-w.done:
		return w.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Buffered returns how many output bytes of a running bundle the runner
// holds: all it has sent so far, held until it finishes, or for a
// streamed bundle what is not yet handed over; 0 once it is gone.
func (w *Worker) Buffered(instruction string) int {
	b := w.bundle(instruction)
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.heldLocked()
}
