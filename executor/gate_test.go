package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/watermarkmgr"
)

// wmLog records the watermarks and finish an operator hears.
type wmLog struct{ calls []string }

func (l *wmLog) Process(context.Context, int, [][]byte) error { return nil }
func (l *wmLog) Watermark(_ context.Context, port int, wm mtime.Time) error {
	l.calls = append(l.calls, fmt.Sprintf("port%d=%v", port, int64(wm)))
	return nil
}
func (l *wmLog) Barrier(context.Context, BarrierID) error { return nil }
func (l *wmLog) Finish(context.Context) error {
	l.calls = append(l.calls, "finish")
	return nil
}

// TestGatePortWatermarks: each port's watermark is the minimum over its own
// channels, is delivered only when it advances, ignores watermarks that
// arrive behind, and reaches +inf when the port's channels end.
func TestGatePortWatermarks(t *testing.T) {
	ctx := context.Background()
	op := &wmLog{}
	// channels 0, 1 and 3 feed port 0; channel 2 feeds port 1.
	g := newGate(op, &Output{}, func(BarrierID) {}, []int{0, 0, 1, 0})
	wm := func(ch int, t mtime.Time) envelope {
		return envelope{ch, Message{Kind: KindWatermark, Watermark: t}}
	}
	end := func(ch int) envelope { return envelope{ch, Message{Kind: KindEnd}} }
	for i, env := range []envelope{
		wm(0, 10), wm(1, 20), wm(3, 5), // port 0 at 5
		wm(2, 7),       // port 1 at 7
		wm(3, 3),       // behind: ignored
		wm(3, 30),      // port 0 at 10
		end(0),         // port 0 at 20
		end(2),         // port 1 at +inf
		end(1), end(3), // port 0 at 30, then +inf; finish
	} {
		if err := g.handle(ctx, env); err != nil {
			t.Fatalf("envelope %d: %v", i, err)
		}
	}
	inf := int64(mtime.MaxTimestamp)
	want := []string{"port0=5", "port1=7", "port0=10", "port0=20",
		fmt.Sprintf("port1=%d", inf), "port0=30", fmt.Sprintf("port0=%d", inf), "finish"}
	if !slices.Equal(op.calls, want) {
		t.Errorf("operator heard\n %v\nwant\n %v", op.calls, want)
	}
	if err := g.handle(ctx, wm(0, 40)); !errors.Is(err, watermarkmgr.ErrEnded) {
		t.Errorf("watermark after end: %v, want ErrEnded", err)
	}
}
