package executor

import (
	"context"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// countSource emits batches of three-byte elements, then a watermark.
type countSource struct{ batches, size int }

func (s *countSource) Run(ctx context.Context, out *Output, inj *Injector) error {
	for range s.batches {
		b := make([][]byte, s.size)
		for i := range b {
			b[i] = []byte("abc")
		}
		if err := out.Emit(ctx, 0, b); err != nil {
			return err
		}
	}
	return out.Watermark(ctx, 1000)
}

// gatedSink takes nothing until release is closed.
type gatedSink struct{ release chan struct{} }

func (g *gatedSink) Process(ctx context.Context, _ int, _ [][]byte) error {
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (g *gatedSink) Watermark(context.Context, int, mtime.Time) error { return nil }
func (g *gatedSink) Barrier(context.Context, BarrierID) error         { return nil }
func (g *gatedSink) Finish(context.Context) error                     { return nil }

// TestSampleCountsAndBackpressure checks what Sample reads of a source
// held up by its consumer: the counts on both sides of the edge, the
// watermarks, a full queue while the consumer is stuck, and time spent
// backpressured.
func TestSampleCountsAndBackpressure(t *testing.T) {
	sink := &gatedSink{release: make(chan struct{})}
	g := &Graph{InboxSize: 2, Nodes: []*Node{
		{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) {
			return &countSource{batches: 20, size: 10}, nil
		}},
		{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{From: 0}}, New: func(int, *Output) (Operator, error) {
			return sink, nil
		}},
	}}
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background(), nil) }()

	// Wait until the sink's queue is full: the source is then waiting.
	for {
		s := g.Sample(nil)
		if len(s) == 2 && s[1].QueueDepth == s[1].QueueCapacity {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("graph ended before its queue filled: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	close(sink.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := g.Sample(nil)
	src, dst := s[0], s[1]
	if src.Node != 0 || dst.Node != 1 {
		t.Fatalf("sample order: %+v", s)
	}
	if src.ElementsOut != 200 || src.BytesOut != 600 || dst.ElementsIn != 200 || dst.BytesIn != 600 {
		t.Errorf("counts: source out %d elements %d bytes, sink in %d elements %d bytes; want 200 and 600 on both",
			src.ElementsOut, src.BytesOut, dst.ElementsIn, dst.BytesIn)
	}
	if src.Backpressured <= 0 {
		t.Errorf("source backpressured %v, want > 0: it waited on a full queue", src.Backpressured)
	}
	if src.OutputWatermark != 1000 || dst.InputWatermark < 1000 {
		t.Errorf("watermarks: source out %v, sink in %v; want 1000 and at least 1000", src.OutputWatermark, dst.InputWatermark)
	}
	if !src.Ended || !dst.Ended || src.Running <= 0 {
		t.Errorf("ended %v %v, running %v", src.Ended, dst.Ended, src.Running)
	}
	if src.Idle+src.Backpressured > src.Running || dst.Idle+dst.Backpressured > dst.Running {
		t.Errorf("waits exceed running time: %+v", s)
	}
}
