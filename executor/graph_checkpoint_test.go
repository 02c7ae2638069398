package executor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// recorder is a Checkpointer that records what subtasks report.
type recorder struct {
	mu       sync.Mutex
	snaps    map[string]int
	done     map[string]BarrierRecord
	finished map[string]bool
	doneC    chan string
}

func newRecorder() *recorder {
	return &recorder{snaps: map[string]int{}, done: map[string]BarrierRecord{}, finished: map[string]bool{},
		doneC: make(chan string, 100)}
}

func (r *recorder) SwitchAt(BarrierID) (time.Time, bool) { return time.Time{}, false }
func (r *recorder) Snapshot(node, sub int, id BarrierID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snaps[fmt.Sprint(node, "/", sub, "/", id)]++
	return nil
}
func (r *recorder) Done(rec BarrierRecord) {
	k := fmt.Sprint(rec.Node, "/", rec.Subtask, "/", rec.ID)
	r.mu.Lock()
	r.done[k] = rec
	r.mu.Unlock()
	r.doneC <- k
}
func (r *recorder) Finished(node, sub int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished[fmt.Sprint(node, "/", sub)] = true
}

// endless keeps running in Finish after its input ended, as an SDK stage
// resuming an unbounded SDF does, polling for barriers between units of
// work, until it has snapshotted `until` barriers.
type endless struct {
	out     *Output
	until   int
	barrier int
	polling chan struct{}
}

func (e *endless) Process(ctx context.Context, _ int, elems [][]byte) error {
	return e.out.Emit(ctx, 0, elems)
}
func (e *endless) Watermark(context.Context, int, mtime.Time) error { return nil }
func (e *endless) Barrier(context.Context, BarrierID) error         { e.barrier++; return nil }
func (e *endless) Finish(ctx context.Context) error {
	close(e.polling)
	for e.barrier < e.until {
		if err := PollBarriers(ctx); err != nil {
			return err
		}
		if err := e.out.Emit(ctx, 0, [][]byte{[]byte("work")}); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// TestBarriersReachSubtasksWhoseInputsEnded runs a source that ends at
// once before an operator that runs on in Finish: barriers are injected
// into the operator, snapshotted there, and flow on to the sink; the
// finished source is reported, not waited for.
func TestBarriersReachSubtasksWhoseInputsEnded(t *testing.T) {
	const barriers = 3
	rec := newRecorder()
	polling := make(chan struct{})
	g := &Graph{
		Checkpoints: rec,
		Nodes: []*Node{
			{Name: "impulse", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return Impulse{}, nil }},
			{Name: "sdf", Parallelism: 1, Outputs: 1, Inputs: []NodeInput{{Port: 0, From: 0}},
				New: func(_ int, o *Output) (Operator, error) {
					return &endless{out: o, until: barriers, polling: polling}, nil
				}},
			{Name: "sink", Parallelism: 2, Outputs: 0, Inputs: []NodeInput{{Port: 0, From: 1}},
				New: func(int, *Output) (Operator, error) { return &ckptLog{}, nil }},
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bar := make(chan BarrierID)
	errc := make(chan error, 1)
	go func() { errc <- g.Run(ctx, bar) }()
	<-polling
	for id := BarrierID(1); id <= barriers; id++ {
		bar <- id
		// One checkpoint in flight: wait for the sinks' reports.
		for want := map[string]bool{fmt.Sprint("2/0/", id): true, fmt.Sprint("2/1/", id): true}; len(want) > 0; {
			delete(want, <-rec.doneC)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= barriers; id++ {
		for _, k := range []string{"1/0/", "2/0/", "2/1/"} {
			k := fmt.Sprint(k, id)
			if rec.snaps[k] != 1 {
				t.Errorf("%s snapshotted %d times, want 1", k, rec.snaps[k])
			}
			if _, ok := rec.done[k]; !ok {
				t.Errorf("%s not reported", k)
			}
		}
	}
	for _, k := range []string{"0/0", "1/0", "2/0", "2/1"} {
		if !rec.finished[k] {
			t.Errorf("subtask %s ended unreported", k)
		}
	}
}

// gatedSource emits its batches, then forwards one barrier, then one more
// batch, and ends.
type gatedSource struct {
	batches int
	polled  chan struct{} // closed once the barrier went out
}

func (s *gatedSource) Run(ctx context.Context, out *Output, inj *Injector) error {
	for i := range s.batches {
		if err := out.Emit(ctx, 0, [][]byte{{byte(i)}}); err != nil {
			return err
		}
	}
	for n := 0; n == 0; {
		var err error
		if n, err = inj.Poll(); err != nil {
			return err
		}
		if n == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
	close(s.polled)
	return out.Emit(ctx, 0, [][]byte{{'a'}})
}

// slowSink takes a batch only when the test lets it: it signals each
// batch it starts on started, then waits for go.
type slowSink struct {
	mu        sync.Mutex
	processed []byte
	atBarrier int // batches processed when the barrier was snapshotted
	started   chan struct{}
	next      chan struct{}
}

func (s *slowSink) Process(ctx context.Context, _ int, elems [][]byte) error {
	s.started <- struct{}{}
	select {
	case <-s.next:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range elems {
		s.processed = append(s.processed, e...)
	}
	return nil
}
func (s *slowSink) Watermark(context.Context, int, mtime.Time) error { return nil }
func (s *slowSink) Barrier(context.Context, BarrierID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.atBarrier = len(s.processed)
	return nil
}
func (s *slowSink) Finish(context.Context) error { return nil }

// unalignedRecorder is a recorder whose checkpoints go unaligned at once.
type unalignedRecorder struct{ *recorder }

func (unalignedRecorder) SwitchAt(BarrierID) (time.Time, bool) { return time.Time{}, true }

// TestUnalignedBarrierOvertakesABackpressuredInbox runs a source that
// fills a slow subtask's inbox with N batches while the subtask is busy
// with the first, then sends a barrier. Unaligned, the slow subtask
// snapshots after that first batch alone, with the N queued batches as
// its in-flight data in order, and reports the checkpoint before it
// processes any of them; aligned, its snapshot comes after all of them.
func TestUnalignedBarrierOvertakesABackpressuredInbox(t *testing.T) {
	const queued = 6
	for _, unaligned := range []bool{true, false} {
		t.Run(fmt.Sprint("unaligned=", unaligned), func(t *testing.T) {
			rec := newRecorder()
			var cp Checkpointer = rec
			if unaligned {
				cp = unalignedRecorder{rec}
			}
			src := &gatedSource{batches: queued + 1, polled: make(chan struct{})}
			sink := &slowSink{started: make(chan struct{}, 100), next: make(chan struct{}, 100)}
			g := &Graph{
				Checkpoints: cp,
				InboxSize:   queued,
				Nodes: []*Node{
					{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return src, nil }},
					{Name: "slow", Parallelism: 1, Inputs: []NodeInput{{Port: 0, From: 0}},
						New: func(int, *Output) (Operator, error) { return sink, nil }},
				},
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			bar := make(chan BarrierID, 1)
			errc := make(chan error, 1)
			go func() { errc <- g.Run(ctx, bar) }()
			<-sink.started // busy with batch 0; the source fills the inbox
			bar <- 1
			<-src.polled // the barrier is on the slow subtask's priority lane
			if unaligned {
				sink.next <- struct{}{} // finish batch 0 only
				for k := <-rec.doneC; k != "1/0/1"; k = <-rec.doneC {
				}
				sink.mu.Lock()
				n := len(sink.processed)
				sink.mu.Unlock()
				if n != 1 {
					t.Errorf("the slow subtask had processed %d batches when it reported the checkpoint, want 1", n)
				}
			}
			for range queued + 2 {
				sink.next <- struct{}{}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			r, ok := rec.done["1/0/1"]
			if !ok {
				t.Fatal("the slow subtask did not report checkpoint 1")
			}
			var flight []byte
			if err := DecodeInFlight(r.InFlight, func(ch, port int, elems [][]byte) error {
				for _, e := range elems {
					flight = append(flight, e...)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			wantFlight, wantAt := []byte{1, 2, 3, 4, 5, 6}, 1
			if !unaligned {
				wantFlight, wantAt = nil, queued+1
			}
			if r.Unaligned != unaligned || !slices.Equal(flight, wantFlight) || sink.atBarrier != wantAt {
				t.Errorf("record unaligned %v, in-flight %v, snapshot after %d batches; want %v, %v, %d",
					r.Unaligned, flight, sink.atBarrier, unaligned, wantFlight, wantAt)
			}
			if want := []byte{0, 1, 2, 3, 4, 5, 6, 'a'}; !slices.Equal(sink.processed, want) {
				t.Errorf("the slow subtask processed %v, want %v", sink.processed, want)
			}
		})
	}
}
