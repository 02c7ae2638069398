package fnapi

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
)

// ErrWorkerLost fails the work of a worker whose control stream ended.
var ErrWorkerLost = errors.New("fnapi: worker lost")

// Worker is one SDK worker process as the runner sees it.
type Worker struct {
	ID    string
	env   string
	onLog func(string, *fnpb.LogEntry)

	connected chan struct{} // closed when the control stream arrives
	done      chan struct{} // closed when the worker is lost or stopped

	sendMu  sync.Mutex // serialises Send on the control stream
	control fnpb.BeamFnControl_ControlServer

	dataMu sync.Mutex // serialises Send on the data stream
	data   fnpb.BeamFnData_DataServer
	dataUp chan struct{}
	logs   logRing

	mu struct {
		sync.Mutex
		nextID  int
		pending map[string]chan *fnpb.InstructionResponse
		bundles map[string]*bundle
		err     error
		dataSet bool
	}
}

func newWorker(id, env string, onLog func(string, *fnpb.LogEntry)) *Worker {
	w := &Worker{ID: id, env: env, onLog: onLog,
		connected: make(chan struct{}), done: make(chan struct{}), dataUp: make(chan struct{})}
	w.mu.pending = map[string]chan *fnpb.InstructionResponse{}
	w.mu.bundles = map[string]*bundle{}
	return w
}

// Done is closed when the worker is lost or stopped.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Err says why the worker is gone.
func (w *Worker) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.err
}

// LastLogs returns the worker's most recent log lines, oldest first.
//
// A lost worker's last lines travel on its logging stream, which ends
// about when its control stream does but not in step with it: for a
// worker that is gone, LastLogs first waits (at most logGrace) for that
// stream to end, so that the lines that explain a crash are in the error.
func (w *Worker) LastLogs() []string {
	select {
	case <-w.done:
		t := time.NewTimer(logGrace)
		defer t.Stop()
		select {
		case <-w.logs.settled():
		case <-t.C:
		}
	default:
	}
	return w.logs.lines()
}

// logGrace bounds how long LastLogs waits for a lost worker's logs.
const logGrace = 2 * time.Second

func (w *Worker) serveControl(stream fnpb.BeamFnControl_ControlServer) error {
	w.mu.Lock()
	if w.control != nil {
		w.mu.Unlock()
		return fmt.Errorf("fnapi: worker %s opened a second control stream", w.ID)
	}
	w.control = stream
	w.mu.Unlock()
	close(w.connected)
	for {
		resp, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			w.lose(fmt.Errorf("%w: %s: control stream ended: %v", ErrWorkerLost, w.ID, err))
			return nil
		}
		w.mu.Lock()
		ch, ok := w.mu.pending[resp.GetInstructionId()]
		delete(w.mu.pending, resp.GetInstructionId())
		w.mu.Unlock()
		if ok {
			ch <- resp
		}
	}
}

// instruct sends req and returns the channel its response arrives on.
func (w *Worker) instruct(req *fnpb.InstructionRequest) (<-chan *fnpb.InstructionResponse, error) {
	select {
	case <-w.connected:
	case <-w.done:
		return nil, w.Err()
	}
	ch := make(chan *fnpb.InstructionResponse, 1)
	w.mu.Lock()
	if w.mu.err != nil {
		w.mu.Unlock()
		return nil, w.mu.err
	}
	w.mu.pending[req.GetInstructionId()] = ch
	w.mu.Unlock()
	w.sendMu.Lock()
	err := w.control.Send(req)
	w.sendMu.Unlock()
	if err != nil {
		w.lose(fmt.Errorf("%w: %s: send instruction: %v", ErrWorkerLost, w.ID, err))
		return nil, w.Err()
	}
	return ch, nil
}

func (w *Worker) newInstructionID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.nextID++
	return fmt.Sprintf("inst%d", w.mu.nextID)
}

// lose fails everything pending on the worker with err, once.
func (w *Worker) lose(err error) {
	w.mu.Lock()
	if w.mu.err != nil {
		w.mu.Unlock()
		return
	}
	w.mu.err = err
	bundles := w.mu.bundles
	w.mu.bundles = map[string]*bundle{}
	w.mu.pending = map[string]chan *fnpb.InstructionResponse{}
	w.mu.Unlock()
	close(w.done)
	for _, b := range bundles {
		b.fail(err)
	}
}

func (w *Worker) stop() { w.lose(fmt.Errorf("%w: %s: stopped", ErrWorkerLost, w.ID)) }

func (w *Worker) serveData(stream fnpb.BeamFnData_DataServer) error {
	w.mu.Lock()
	if w.mu.dataSet {
		w.mu.Unlock()
		return fmt.Errorf("fnapi: worker %s opened a second data stream", w.ID)
	}
	w.mu.dataSet = true
	w.data = stream
	w.mu.Unlock()
	close(w.dataUp)
	for {
		msg, err := stream.Recv()
		if err != nil {
			// Without its data stream a worker can finish no bundle.
			w.lose(fmt.Errorf("%w: %s: data stream ended: %v", ErrWorkerLost, w.ID, err))
			return nil
		}
		for _, d := range msg.GetData() {
			if b := w.bundle(d.GetInstructionId()); b != nil {
				b.receive(d)
			}
		}
		for _, t := range msg.GetTimers() {
			if b := w.bundle(t.GetInstructionId()); b != nil {
				b.receiveTimers(t)
			}
		}
	}
}

func (w *Worker) bundle(id string) *bundle {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.bundles[id]
}

// sendData sends one data frame, waiting for the data stream to open.
func (w *Worker) sendData(e *fnpb.Elements) error {
	select {
	case <-w.dataUp:
	case <-w.done:
		return w.Err()
	}
	w.dataMu.Lock()
	defer w.dataMu.Unlock()
	if err := w.data.Send(e); err != nil {
		w.lose(fmt.Errorf("%w: %s: send data: %v", ErrWorkerLost, w.ID, err))
		return w.Err()
	}
	return nil
}

func (w *Worker) serveState(stream fnpb.BeamFnState_StateServer) error {
	var sendMu sync.Mutex
	for {
		req, err := stream.Recv()
		if err != nil {
			return nil
		}
		resp := w.answerState(req)
		sendMu.Lock()
		err = stream.Send(resp)
		sendMu.Unlock()
		if err != nil {
			return nil
		}
	}
}

func (w *Worker) answerState(req *fnpb.StateRequest) *fnpb.StateResponse {
	b := w.bundle(req.GetInstructionId())
	if b == nil || b.state == nil {
		return &fnpb.StateResponse{Id: req.GetId(),
			Error: fmt.Sprintf("weir: state request for instruction %q, which has no state", req.GetInstructionId())}
	}
	resp, err := b.state.HandleState(req)
	if err != nil {
		return &fnpb.StateResponse{Id: req.GetId(), Error: err.Error()}
	}
	resp.Id = req.GetId()
	return resp
}
