// Package fnapitest provides a fake SDK worker that speaks the Fn API, so
// the runner's side of the protocol is tested without an SDK.
package fnapitest

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/weir-runner/weir/wire"
)

// Worker is a fake SDK worker. For each ProcessBundle it copies the data of
// every source transform to the sink transforms named in Echo, then answers.
type Worker struct {
	// Echo maps a source transform to the sink transform its data goes to.
	Echo map[string]string
	// CrashOnBundle, when set, makes the worker drop its connections on
	// receiving a ProcessBundle request instead of answering it.
	CrashOnBundle bool
	// Fail, when set, makes every bundle fail with this message.
	Fail string
	// FailEarly makes a failing worker (Fail) answer at once, without ever
	// opening its data stream, as an SDK does that cannot build a bundle's
	// descriptor.
	FailEarly bool

	// Restrictions makes bundles behave like a splittable DoFn's: each
	// input element is a restriction (see Restriction) and the worker emits
	// every position in it to the sink (see Position), Pace apart, and
	// answers split requests.
	Restrictions bool
	Pace         time.Duration
	// RefuseSplits makes the worker decline every split.
	RefuseSplits bool
	// UnnamedChannelSplits makes the worker answer splits as Beam Java's
	// harness does (BeamFnDataReadRunner.trySplit, as of 2.73): its
	// channel splits name no transform.
	UnnamedChannelSplits bool
	// StreamOutput makes a Restrictions worker send each position as it
	// produces it, rather than all at the end of the bundle.
	StreamOutput bool
	// CrashAfterSplit makes the worker drop its connections a few positions
	// after its first accepted split.
	CrashAfterSplit bool
	// OnPosition, if set, hears of each position a Restrictions worker
	// produces, and OnSplit of each split it answers, with the fraction
	// asked and whether it split. Both are called with the bundle's lock
	// held: they must not block.
	OnPosition func(p uint32)
	OnSplit    func(fraction float64, split bool)

	// Stateful, when set, stands in for a stateful DoFn: once a bundle's
	// inputs and timer families have all ended, it gets what the bundle
	// received and returns what the bundle outputs to each sink of Echo and
	// the timers it sets. Every timer family the runner ended gets its end
	// mark back. It is called from one goroutine per bundle.
	Stateful func(in BundleIn) BundleOut
	// Produce, when set, stands in for a DoFn whose output leaves while
	// it runs: once a bundle's inputs have ended, it gets them and sends
	// output with emit, each call one data frame sent at once; the
	// bundle's end marks and response follow when it returns. It is
	// called from one goroutine per bundle. Crash drops the worker's
	// connections, as a worker that dies mid-bundle.
	Produce func(in BundleIn, emit func(sink string, data []byte), crash func())

	largest atomic.Int64 // bytes of the largest data frame received

	conn   *grpc.ClientConn
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start connects the worker to endpoint as id.
func (w *Worker) Start(endpoint, id string) error {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	w.conn = conn
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), "worker_id", id))
	w.cancel = cancel
	logs, err := fnpb.NewBeamFnLoggingClient(conn).Logging(ctx)
	if err != nil {
		return err
	}
	_ = logs.Send(&fnpb.LogEntry_List{LogEntries: []*fnpb.LogEntry{{
		Severity: fnpb.LogEntry_Severity_INFO, Message: "fake worker " + id + " started"}}})
	ctl, err := fnpb.NewBeamFnControlClient(conn).Control(ctx)
	if err != nil {
		return err
	}
	var data fnpb.BeamFnData_DataClient
	if !w.FailEarly {
		data, err = fnpb.NewBeamFnDataClient(conn).Data(ctx)
		if err != nil {
			return err
		}
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.serve(ctx, ctl, data)
	}()
	return nil
}

// Stop disconnects the worker.
func (w *Worker) Stop() {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
	if w.conn != nil {
		w.conn.Close()
	}
}

// LargestFrame returns the bytes of the largest data frame the worker has
// received.
func (w *Worker) LargestFrame() int { return int(w.largest.Load()) }

// Restriction encodes the restriction [start, end) as an input element of a
// Restrictions worker.
func Restriction(start, end uint32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, start), end)
}

// Position reads an output element of a Restrictions worker: a windowed
// value in the global window whose value is 4 bytes.
func Position(b []byte) uint32 { return binary.BigEndian.Uint32(b[len(b)-4:]) }

func appendPosition(dst []byte, p uint32) []byte {
	return wire.AppendWindowedValue(dst, 0, nil, []byte{wire.PaneNoFiring}, binary.BigEndian.AppendUint32(nil, p))
}

// TimerFamily names a timer family of a transform.
type TimerFamily struct{ Transform, Family string }

// BundleIn is what a Stateful worker's bundle received: the data of each
// source transform and the fired timers of each family, as sent.
type BundleIn struct {
	Instruction string
	Data        map[string][]byte
	Timers      map[TimerFamily][]byte
}

// BundleOut is what a Stateful worker's bundle sends back: the data of
// each sink transform and the timers set, by family, encoded.
type BundleOut struct {
	Data   map[string][]byte
	Timers map[TimerFamily][]byte
}

type bundleIn struct {
	data map[string][]byte
	ends map[string][]int // where each data frame of a source ended
	last map[string]bool
	done chan struct{}
	// timers and timersLast: the fired timers of each family, and the
	// families that have ended.
	timers     map[TimerFamily][]byte
	timersLast map[TimerFamily]bool

	mu    sync.Mutex
	elems [][2]uint32 // restrictions, once all input arrived
	cur   int         // element being processed
	pos   uint32      // next position of elems[cur]
	end   int         // elements from end on were split off
	split int         // accepted splits
}

type server struct {
	ctx  context.Context
	w    *Worker
	ctl  fnpb.BeamFnControl_ControlClient
	data fnpb.BeamFnData_DataClient

	sendMu sync.Mutex // serialises sends on ctl and data

	mu      sync.Mutex
	bundles map[string]*bundleIn
}

func (s *server) get(id string) *bundleIn {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.bundles[id]
	if !ok {
		b = &bundleIn{data: map[string][]byte{}, ends: map[string][]int{}, last: map[string]bool{}, done: make(chan struct{}),
			timers: map[TimerFamily][]byte{}, timersLast: map[TimerFamily]bool{}}
		s.bundles[id] = b
	}
	return b
}

func (s *server) active(id string) *bundleIn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bundles[id]
}

func (s *server) send(resp *fnpb.InstructionResponse, out *fnpb.Elements) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if out != nil {
		if err := s.data.Send(out); err != nil {
			return err
		}
	}
	if resp != nil {
		return s.ctl.Send(resp)
	}
	return nil
}

func (w *Worker) serve(ctx context.Context, ctl fnpb.BeamFnControl_ControlClient, data fnpb.BeamFnData_DataClient) {
	s := &server{ctx: ctx, w: w, ctl: ctl, data: data, bundles: map[string]*bundleIn{}}
	if data != nil {
		go s.receiveData()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		req, err := ctl.Recv()
		if err != nil {
			return
		}
		switch {
		case req.GetProcessBundle() != nil:
			if w.CrashOnBundle {
				w.cancel()
				return
			}
			if w.FailEarly {
				_ = s.send(&fnpb.InstructionResponse{InstructionId: req.GetInstructionId(),
					Error: fmt.Sprintf("%s (bundle %s)", w.Fail, req.GetInstructionId())}, nil)
				continue
			}
			s.get(req.GetInstructionId()) // known to splits from now on
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.process(req.GetInstructionId())
			}()
		case req.GetProcessBundleSplit() != nil:
			_ = s.send(s.answerSplit(req), nil)
		default:
			_ = s.send(&fnpb.InstructionResponse{InstructionId: req.GetInstructionId()}, nil)
		}
	}
}

func (s *server) receiveData() {
	for {
		msg, err := s.data.Recv()
		if err != nil {
			return
		}
		ended := map[*bundleIn]bool{}
		for _, d := range msg.GetData() {
			b := s.get(d.GetInstructionId())
			b.mu.Lock()
			if d.GetIsLast() {
				// As Python's harness does, an end mark is only that: data
				// sent with it is dropped.
				b.last[d.GetTransformId()] = true
				if len(b.last) == len(s.w.Echo) {
					ended[b] = true
				}
				b.mu.Unlock()
				continue
			}
			b.data[d.GetTransformId()] = append(b.data[d.GetTransformId()], d.GetData()...)
			b.ends[d.GetTransformId()] = append(b.ends[d.GetTransformId()], len(b.data[d.GetTransformId()]))
			if n := int64(len(d.GetData())); n > s.w.largest.Load() {
				s.w.largest.Store(n)
			}
			b.mu.Unlock()
		}
		for _, t := range msg.GetTimers() {
			b := s.get(t.GetInstructionId())
			f := TimerFamily{t.GetTransformId(), t.GetTimerFamilyId()}
			b.mu.Lock()
			if t.GetIsLast() {
				b.timersLast[f] = true
			} else {
				b.timers[f] = append(b.timers[f], t.GetTimers()...)
			}
			b.mu.Unlock()
		}
		// The runner ends the data and every timer family of a bundle in one
		// message, so the bundle is complete once that message is read.
		for b := range ended {
			close(b.done)
		}
	}
}

func (s *server) process(id string) {
	b := s.get(id)
	select {
	case <-b.done:
	case <-s.ctx.Done():
		return
	}
	defer func() {
		s.mu.Lock()
		delete(s.bundles, id)
		s.mu.Unlock()
	}()
	resp := &fnpb.InstructionResponse{InstructionId: id,
		Response: &fnpb.InstructionResponse_ProcessBundle{ProcessBundle: &fnpb.ProcessBundleResponse{}}}
	if s.w.Fail != "" {
		resp.Error = fmt.Sprintf("%s (bundle %s)", s.w.Fail, id)
		_ = s.send(resp, nil)
		return
	}
	if s.w.Stateful != nil {
		_ = s.send(resp, s.stateful(b, id))
		return
	}
	if s.w.Produce != nil {
		s.produce(b, id, resp)
		return
	}
	out := &fnpb.Elements{}
	for src, sink := range s.w.Echo {
		b.mu.Lock()
		in := b.data[src]
		b.mu.Unlock()
		if s.w.Restrictions {
			var ok bool
			if in, ok = s.restrictions(b, in, id, sink); !ok {
				return
			}
		}
		if s.w.Restrictions {
			out.Data = append(out.Data, &fnpb.Elements_Data{InstructionId: id, TransformId: sink, Data: in, IsLast: true})
			continue
		}
		// Echo the input in the frames it came in.
		b.mu.Lock()
		ends := b.ends[src]
		b.mu.Unlock()
		from := 0
		for i, end := range ends {
			out.Data = append(out.Data, &fnpb.Elements_Data{InstructionId: id, TransformId: sink,
				Data: in[from:end], IsLast: i == len(ends)-1})
			from = end
		}
	}
	_ = s.send(resp, out)
}

// stateful runs a bundle through the Stateful hook and returns its output:
// each sink's data and each ended timer family's timers, with end marks.
func (s *server) stateful(b *bundleIn, id string) *fnpb.Elements {
	b.mu.Lock()
	in := BundleIn{Instruction: id, Data: map[string][]byte{}, Timers: map[TimerFamily][]byte{}}
	for src := range s.w.Echo {
		in.Data[src] = b.data[src]
	}
	for f, t := range b.timers {
		in.Timers[f] = t
	}
	var families []TimerFamily
	for f := range b.timersLast {
		families = append(families, f)
	}
	b.mu.Unlock()
	res := s.w.Stateful(in)
	out := &fnpb.Elements{}
	for _, sink := range s.w.Echo {
		if d := res.Data[sink]; len(d) > 0 {
			out.Data = append(out.Data, &fnpb.Elements_Data{InstructionId: id, TransformId: sink, Data: d})
		}
		out.Data = append(out.Data, &fnpb.Elements_Data{InstructionId: id, TransformId: sink, IsLast: true})
	}
	for _, f := range families {
		if t := res.Timers[f]; len(t) > 0 {
			out.Timers = append(out.Timers, &fnpb.Elements_Timers{InstructionId: id, TransformId: f.Transform,
				TimerFamilyId: f.Family, Timers: t})
		}
		out.Timers = append(out.Timers, &fnpb.Elements_Timers{InstructionId: id, TransformId: f.Transform,
			TimerFamilyId: f.Family, IsLast: true})
	}
	return out
}

// produce runs a bundle through the Produce hook, sending its output as
// the hook emits it, then the end marks and the response.
func (s *server) produce(b *bundleIn, id string, resp *fnpb.InstructionResponse) {
	b.mu.Lock()
	in := BundleIn{Instruction: id, Data: map[string][]byte{}}
	for src := range s.w.Echo {
		in.Data[src] = b.data[src]
	}
	b.mu.Unlock()
	crashed := false
	s.w.Produce(in, func(sink string, data []byte) {
		if !crashed {
			_ = s.send(nil, &fnpb.Elements{Data: []*fnpb.Elements_Data{{InstructionId: id, TransformId: sink, Data: data}}})
		}
	}, func() {
		crashed = true
		s.w.cancel()
	})
	if crashed {
		return
	}
	out := &fnpb.Elements{}
	for _, sink := range s.w.Echo {
		out.Data = append(out.Data, &fnpb.Elements_Data{InstructionId: id, TransformId: sink, IsLast: true})
	}
	_ = s.send(resp, out)
}

// restrictions processes a bundle's restrictions one position at a time,
// and reports false if the worker crashed meanwhile.
func (s *server) restrictions(b *bundleIn, in []byte, id, sink string) ([]byte, bool) {
	b.mu.Lock()
	for ; len(in) >= 8; in = in[8:] {
		b.elems = append(b.elems, [2]uint32{binary.BigEndian.Uint32(in), binary.BigEndian.Uint32(in[4:])})
	}
	b.end = len(b.elems)
	if b.end > 0 {
		b.pos = b.elems[0][0]
	}
	b.mu.Unlock()
	var out []byte
	crashIn := -1
	for {
		select {
		case <-time.After(s.w.Pace):
		case <-s.ctx.Done():
			return nil, false
		}
		b.mu.Lock()
		for b.cur < b.end && b.pos >= b.elems[b.cur][1] {
			b.cur++
			if b.cur < b.end {
				b.pos = b.elems[b.cur][0]
			}
		}
		if b.cur >= b.end {
			b.mu.Unlock()
			return out, true
		}
		if s.w.OnPosition != nil {
			s.w.OnPosition(b.pos)
		}
		if s.w.StreamOutput {
			// As the Go SDK does, output leaves as it is produced.
			pos := appendPosition(nil, b.pos)
			_ = s.send(nil, &fnpb.Elements{Data: []*fnpb.Elements_Data{{InstructionId: id, TransformId: sink, Data: pos}}})
		} else {
			out = appendPosition(out, b.pos)
		}
		b.pos++
		if s.w.CrashAfterSplit && b.split > 0 && crashIn < 0 {
			crashIn = 3
		}
		b.mu.Unlock()
		if crashIn--; crashIn == 0 {
			s.w.cancel()
			return nil, false
		}
	}
}

// split answers a split request like the Go SDK does: within the element
// being processed if it has two or more positions left, else between
// elements, else not at all.
func (s *server) split(req *fnpb.InstructionRequest) *fnpb.InstructionResponse {
	msg := req.GetProcessBundleSplit()
	resp := &fnpb.InstructionResponse{InstructionId: req.GetInstructionId()}
	b := s.active(msg.GetInstructionId())
	if b == nil || !s.w.Restrictions {
		resp.Error = fmt.Sprintf("instruction %s not active", msg.GetInstructionId())
		return resp
	}
	sr := &fnpb.ProcessBundleSplitResponse{}
	resp.Response = &fnpb.InstructionResponse_ProcessBundleSplit{ProcessBundleSplit: sr}
	var src string
	var frac float64
	for t, d := range msg.GetDesiredSplits() {
		src, frac = t, d.GetFractionOfRemainder()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.w.OnSplit != nil {
		defer func() { s.w.OnSplit(frac, len(sr.GetChannelSplits()) > 0) }()
	}
	if s.w.RefuseSplits || b.elems == nil || b.cur >= b.end {
		return resp
	}
	if e := b.elems[b.cur]; e[1]-b.pos >= 2 {
		mid := b.pos + max(1, uint32(frac*float64(e[1]-b.pos)))
		mid = min(mid, e[1]-1)
		b.elems[b.cur][1] = mid
		sr.PrimaryRoots = []*fnpb.BundleApplication{{TransformId: "sdf", Element: Restriction(e[0], mid)}}
		sr.ResidualRoots = []*fnpb.DelayedBundleApplication{{Application: &fnpb.BundleApplication{
			TransformId: "sdf", Element: Restriction(mid, e[1])}}}
		sr.ChannelSplits = []*fnpb.ProcessBundleSplitResponse_ChannelSplit{{TransformId: src,
			LastPrimaryElement: int64(b.cur) - 1, FirstResidualElement: int64(b.cur) + 1}}
		b.end = b.cur + 1
		b.split++
		return resp
	}
	rest := b.end - b.cur - 1
	if rest < 1 {
		return resp
	}
	ri := b.cur + 1 + int(frac*float64(rest))
	sr.ChannelSplits = []*fnpb.ProcessBundleSplitResponse_ChannelSplit{{TransformId: src,
		LastPrimaryElement: int64(ri) - 1, FirstResidualElement: int64(ri)}}
	b.end = ri
	b.split++
	return resp
}

// answerSplit is the worker's response to a split request: the split, its
// channel splits unnamed if the worker is to answer as Java's harness does.
func (s *server) answerSplit(req *fnpb.InstructionRequest) *fnpb.InstructionResponse {
	resp := s.split(req)
	if s.w.UnnamedChannelSplits {
		for _, cs := range resp.GetProcessBundleSplit().GetChannelSplits() {
			cs.TransformId = ""
		}
	}
	return resp
}
