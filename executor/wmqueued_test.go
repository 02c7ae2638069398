package executor

import (
	"context"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// queuedSource sends an element and a watermark, and reports
// Output.WatermarkQueued before and after its consumer took the watermark.
type queuedSource struct {
	checked         chan struct{} // closed after the check before
	took            chan struct{} // the consumer got the watermark
	before, after   bool
	beforeAnyMarker bool
}

func (s *queuedSource) Run(ctx context.Context, out *Output, _ *Injector) error {
	s.beforeAnyMarker = out.WatermarkQueued()
	if err := out.Emit(ctx, 0, [][]byte{{1}}); err != nil {
		return err
	}
	if err := out.Watermark(ctx, 10); err != nil {
		return err
	}
	s.before = out.WatermarkQueued()
	close(s.checked)
	<-s.took
	s.after = out.WatermarkQueued()
	return nil
}

// heldOp holds its first Process until release closes, and closes took
// at its first watermark.
type heldOp struct {
	release, took chan struct{}
	seen          bool
}

func (o *heldOp) Process(ctx context.Context, _ int, _ [][]byte) error {
	select {
	case <-o.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (o *heldOp) Watermark(_ context.Context, _ int, wm mtime.Time) error {
	if !o.seen && wm < mtime.MaxTimestamp {
		o.seen = true
		close(o.took)
	}
	return nil
}

func (o *heldOp) Barrier(context.Context, BarrierID) error { return nil }
func (o *heldOp) Finish(context.Context) error             { return nil }

// TestWatermarkQueued: a watermark sent to a consumer that is busy with
// the element before it is queued until the consumer takes it.
func TestWatermarkQueued(t *testing.T) {
	took := make(chan struct{})
	src := &queuedSource{checked: make(chan struct{}), took: took}
	op := &heldOp{release: make(chan struct{}), took: took}
	g := &Graph{Nodes: []*Node{
		{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return src, nil }},
		{Name: "op", Parallelism: 1, Inputs: []NodeInput{{From: 0}},
			New: func(int, *Output) (Operator, error) { return op, nil }},
	}}
	errc := make(chan error, 1)
	go func() { errc <- g.Run(context.Background(), nil) }()
	// The consumer holds the element before the watermark until the
	// source has looked.
	select {
	case <-src.checked:
	case err := <-errc:
		t.Fatalf("graph ended first: %v", err)
	}
	close(op.release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if src.beforeAnyMarker || !src.before || src.after {
		t.Errorf("queued before any watermark %v, while the consumer held the element %v, after it took the watermark %v; want false, true, false",
			src.beforeAnyMarker, src.before, src.after)
	}
}
