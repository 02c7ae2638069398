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

// seqSource emits batches of elements naming its subtask and a sequence
// number, polling for barriers between them.
type seqSource struct {
	sub, batches int
}

func (s *seqSource) Run(ctx context.Context, out *Output, inj *Injector) error {
	for i := range s.batches {
		e := []byte{byte(s.sub), byte(i >> 8), byte(i)}
		if err := out.Emit(ctx, 0, [][]byte{e}); err != nil {
			return err
		}
		if _, err := inj.Poll(); err != nil {
			return err
		}
	}
	return out.Watermark(ctx, mtime.MaxTimestamp)
}

// relay passes its input on and, as a sink, keeps it.
type relay struct {
	out  *Output
	mu   *sync.Mutex
	got  *[]string
	sink bool
}

func (c *relay) Process(ctx context.Context, _ int, elems [][]byte) error {
	if c.sink {
		c.mu.Lock()
		for _, e := range elems {
			*c.got = append(*c.got, string(e))
		}
		c.mu.Unlock()
		return nil
	}
	return c.out.Emit(ctx, 0, elems)
}
func (c *relay) Watermark(ctx context.Context, _ int, wm mtime.Time) error {
	if c.sink {
		return nil
	}
	return c.out.Watermark(ctx, wm)
}
func (c *relay) Barrier(context.Context, BarrierID) error { return nil }
func (c *relay) Finish(context.Context) error             { return nil }

// TestBarriersInARowLoseNothing runs sources into a stage with several
// input channels and small inboxes, so data queues, while barriers are
// injected one after another without waiting for checkpoints to complete
// (later ones overtake, wait behind or abandon earlier ones), aligned and
// unaligned: every element reaches the sink exactly once, every in-flight
// record decodes, and every subtask ends.
func TestBarriersInARowLoseNothing(t *testing.T) {
	const sources, batches, barriers = 3, 300, 40
	for _, unaligned := range []bool{false, true} {
		t.Run(fmt.Sprint("unaligned=", unaligned), func(t *testing.T) {
			rec := newRecorder()
			rec.doneC = make(chan string, 10000)
			var cp Checkpointer = rec
			if unaligned {
				cp = unalignedRecorder{rec}
			}
			var mu sync.Mutex
			var got []string
			key := func(e []byte) ([]byte, error) { return e[1:], nil }
			g := &Graph{
				Checkpoints: cp,
				InboxSize:   2,
				Nodes: []*Node{
					{Name: "src", Parallelism: sources, Outputs: 1, NewSource: func(i int, _ *Output) (Source, error) {
						return &seqSource{sub: i, batches: batches}, nil
					}},
					{Name: "mid", Parallelism: 2, Outputs: 1, Inputs: []NodeInput{{Port: 0, From: 0, Partition: Hash, Key: key}},
						New: func(_ int, o *Output) (Operator, error) { return &relay{out: o}, nil }},
					{Name: "sink", Parallelism: 2, Inputs: []NodeInput{{Port: 0, From: 1}, {Port: 1, From: 0}},
						New: func(_ int, o *Output) (Operator, error) {
							return &relay{out: o, mu: &mu, got: &got, sink: true}, nil
						}},
				},
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			bar := make(chan BarrierID)
			errc := make(chan error, 1)
			go func() { errc <- g.Run(ctx, bar) }()
			var err error
		inject:
			for id := BarrierID(1); id <= barriers; id++ {
				select {
				case bar <- id:
				case err = <-errc:
					break inject
				}
			}
			if err == nil {
				err = <-errc
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{}
			for s := range sources {
				for i := range batches {
					want[string([]byte{byte(s), byte(i >> 8), byte(i)})] += 2 // via mid and directly
				}
			}
			for _, e := range got {
				want[e]--
			}
			for e, n := range want {
				if n != 0 {
					t.Fatalf("element %v reached the sink %d times, want 2", []byte(e), 2-n)
				}
			}
			unalignedRecords := 0
			for k, r := range rec.done {
				if err := DecodeInFlight(r.InFlight, func(int, int, [][]byte) error { return nil }); err != nil {
					t.Errorf("%s: %v", k, err)
				}
				if r.Unaligned {
					unalignedRecords++
				}
			}
			inFlight := 0
			for _, r := range rec.done {
				inFlight += len(r.InFlight)
			}
			t.Logf("%d checkpoint records, %d unaligned, %d in-flight bytes", len(rec.done), unalignedRecords, inFlight)
			if len(rec.done) == 0 || (unalignedRecords > 0) != unaligned {
				t.Errorf("%d checkpoint records, %d unaligned", len(rec.done), unalignedRecords)
			}
		})
	}
}
