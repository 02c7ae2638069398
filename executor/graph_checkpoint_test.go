package executor

import (
	"context"
	"fmt"
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
