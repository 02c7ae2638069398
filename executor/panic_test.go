package executor

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// panicSource emits one batch and ends, or panics in Run.
type panicSource struct{ panics bool }

func (s panicSource) Run(ctx context.Context, out *Output, inj *Injector) error {
	if s.panics {
		panic("source boom")
	}
	if err := out.Emit(ctx, 0, [][]byte{{1}, {2}}); err != nil {
		return err
	}
	return out.Watermark(ctx, mtime.MaxTimestamp)
}

// panicOp counts what it processes, and panics where told: in Process or,
// as a sink committing its output would, in Finish.
type panicOp struct {
	inProcess, inFinish bool
	seen                int
}

func (o *panicOp) Process(ctx context.Context, port int, elems [][]byte) error {
	if o.inProcess {
		var m map[string]int
		m["operator boom"]++ // a nil map write: a runtime panic
	}
	o.seen += len(elems)
	return nil
}
func (o *panicOp) Watermark(context.Context, int, mtime.Time) error { return nil }
func (o *panicOp) Barrier(context.Context, BarrierID) error         { return nil }
func (o *panicOp) Finish(context.Context) error {
	if o.inFinish {
		panic("sink boom")
	}
	return nil
}

func panicGraph(src panicSource, op *panicOp) *Graph {
	return &Graph{Nodes: []*Node{
		{Name: "src", Parallelism: 1, Outputs: 1,
			NewSource: func(int, *Output) (Source, error) { return src, nil }},
		{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{From: 0}},
			New: func(int, *Output) (Operator, error) { return op, nil }},
	}}
}

// TestPanicFailsItsGraphOnly runs a graph that panics beside one that does
// not: the first fails with the panic and a frame of the panicking code,
// the second finishes, and the test process lives on.
func TestPanicFailsItsGraphOnly(t *testing.T) {
	for _, tc := range []struct {
		name, node, value, frame string
		src                      panicSource
		op                       *panicOp
	}{
		{"source", "src[0]", "source boom", "panicSource.Run", panicSource{panics: true}, &panicOp{}},
		{"operator", "sink[0]", "assignment to entry in nil map", "(*panicOp).Process", panicSource{}, &panicOp{inProcess: true}},
		{"sink", "sink[0]", "sink boom", "(*panicOp).Finish", panicSource{}, &panicOp{inFinish: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			good := &panicOp{}
			goodErr := make(chan error, 1)
			go func() { goodErr <- panicGraph(panicSource{}, good).Run(ctx, nil) }()
			err := panicGraph(tc.src, tc.op).Run(ctx, nil)
			if err == nil {
				t.Fatal("graph with a panic succeeded")
			}
			for _, want := range []string{tc.node + ": panic: ", tc.value, tc.frame} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if err := <-goodErr; err != nil {
				t.Errorf("the other graph: %v", err)
			}
			if good.seen != 2 {
				t.Errorf("the other graph's sink saw %d elements, want 2", good.seen)
			}
		})
	}
}

// TestPanicInSplittingGoroutineFailsTheRun: a panic in one of an SDF run's
// helper goroutines (a bundle, split or progress request) reaches the run's
// loop as its error.
func TestPanicInSplittingGoroutineFailsTheRun(t *testing.T) {
	r := &sdfRun{s: &SDKStage{Spec: &SDKStageSpec{Name: "sdf"}}, ctx: context.Background(),
		events: make(chan sdfEvent, 1)}
	r.goContained("split", func() { panic("split boom") })
	err := r.handle(<-r.events)
	r.wg.Wait()
	if err == nil {
		t.Fatal("no error from a panicking split goroutine")
	}
	for _, want := range []string{"stage sdf: split: panic: split boom", "TestPanicInSplittingGoroutineFailsTheRun"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
