package twophase

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/twophase/twophasetest"
)

// opLog is an SDK stage stand-in that logs what it is handed.
type opLog struct{ log []string }

func (o *opLog) Process(_ context.Context, port int, elems [][]byte) error {
	for _, e := range elems {
		o.log = append(o.log, fmt.Sprintf("p%d:%s", port, e))
	}
	return nil
}
func (o *opLog) Watermark(_ context.Context, port int, wm mtime.Time) error {
	o.log = append(o.log, fmt.Sprintf("wm%d:%d", port, wm))
	return nil
}
func (o *opLog) Barrier(_ context.Context, id executor.BarrierID) error {
	o.log = append(o.log, fmt.Sprint("barrier", id))
	return nil
}
func (o *opLog) Finish(context.Context) error                     { o.log = append(o.log, "finish"); return nil }
func (o *opLog) ProcessingTime(context.Context, mtime.Time) error { return nil }
func (o *opLog) NextWake() (time.Time, bool)                      { return time.Time{}, false }
func (o *opLog) Wake(context.Context, time.Time) error            { return nil }
func (o *opLog) take() []string                                   { l := o.log; o.log = nil; return l }

func b(vals ...string) [][]byte {
	var out [][]byte
	for _, v := range vals {
		out = append(out, []byte(v))
	}
	return out
}

func expect(t *testing.T, o *opLog, want ...string) {
	t.Helper()
	if got := o.take(); !slices.Equal(got, want) {
		t.Errorf("inner got %q, want %q", got, want)
	}
}

// TestStableInput: main input reaches the operator only once a checkpoint
// covering it completes, with the watermark of that barrier; side inputs
// and barriers pass at once; after a crash the restored operator is handed
// exactly the input the checkpoint held.
func TestStableInput(t *testing.T) {
	ctx := context.Background()
	store := twophasetest.Store(t)
	inner := &opLog{}
	s := &StableInput{Inner: inner, Pending: NewPending(store, "st/0", "stable")}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Process(ctx, 0, b("a", "b")))
	must(s.Watermark(ctx, 0, 10))
	must(s.Process(ctx, 1, b("side")))
	must(s.Watermark(ctx, 1, 99))
	expect(t, inner, "p1:side", "wm1:99")
	must(s.Barrier(ctx, 1))
	restore := twophasetest.Checkpoint(t, store, "st/0") // the snapshot at barrier 1
	must(s.Process(ctx, 0, b("c")))
	must(s.Watermark(ctx, 0, 20))
	expect(t, inner, "barrier1")
	must(s.CheckpointComplete(ctx, 1))
	expect(t, inner, "p0:a", "p0:b", "wm0:10")
	must(s.CheckpointComplete(ctx, 1))
	expect(t, inner)

	// A crash now: the restored operator gets what checkpoint 1 held.
	again := &opLog{}
	r := &StableInput{Inner: again, Pending: NewPending(restore(), "st/0", "stable")}
	must(r.Process(ctx, 0, b("c")))
	expect(t, again, "p0:a", "p0:b")
	must(r.Watermark(ctx, 0, 30))
	must(r.Finish(ctx))
	expect(t, again, "p0:c", "wm0:30", "finish")

	must(s.Barrier(ctx, 2))
	must(s.Finish(ctx))
	expect(t, inner, "barrier2", "p0:c", "wm0:20", "finish")
}
