package executor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/timers"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/twophase/twophasetest"
	"github.com/weir-runner/weir/wire"
)

// twoBytes measures the test's values: two bytes each.
func twoBytes(b []byte) (int, error) {
	if len(b) < 2 {
		return 0, wire.ErrShort
	}
	return 2, nil
}

// globalCodec is the codec of two-byte values in the global window.
func globalCodec() *wire.Codec {
	return wire.NewCodec(func([]byte) (int, error) { return 0, nil }, twoBytes)
}

func values(ts mtime.Time, vals ...string) [][]byte {
	var out [][]byte
	for _, v := range vals {
		out = append(out, wire.AppendWindowedValue(nil, ts, nil, []byte{wire.PaneNoFiring}, []byte(v)))
	}
	return out
}

// TestStableInputRestoresStage checkpoints an SDK stage that requires
// stable input, as the runner wraps it (twophase.StableInput), holding
// what the stage keeps in memory: a side input's contents, main-input
// elements waiting for it, an event-time and a processing-time timer. The
// gate snapshots and restores the operator it was given, the wrapper: the
// restored stage must have all of it, and the wrapper's own part (the main
// input watermark of the checkpoint's barrier) must reach it too.
func TestStableInputRestoresStage(t *testing.T) {
	ctx := context.Background()
	spec := &executor.SDKStageSpec{Name: "st", MainCodec: globalCodec(),
		SideInputs: []executor.SideInputSpec{{TransformID: "t", LocalName: "side", Codec: globalCodec()}},
		Stateful:   &executor.StatefulSpec{Transform: "t"}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	store := twophasetest.Store(t)
	inner := executor.NewSDKStage(spec, &executor.Output{})
	w := &twophase.StableInput{Inner: inner, Pending: twophase.NewPending(store, "st/0", "st[0] (stable input)")}
	// The side input's global window stays open (its watermark is not at
	// the end), so main input released to the stage waits for it.
	must(w.Process(ctx, 1, values(1, "s1", "s2")))
	must(w.Watermark(ctx, 1, 50))
	must(w.Process(ctx, 0, values(10, "a1", "b1")))
	must(w.Watermark(ctx, 0, 40))
	must(w.Barrier(ctx, 1))
	must(w.CheckpointComplete(ctx, 1))
	wake := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	executor.SetTimer(inner, timers.Timer{Transform: "t", Family: "ev", Key: []byte("k"), Fire: 70, Hold: 65, Encoded: []byte("E")})
	executor.SetTimer(inner, timers.Timer{Transform: "t", Family: "pt", Key: []byte("k"), Fire: mtime.FromTime(wake),
		Hold: 66, Encoded: []byte("P"), Domain: timers.ProcessingTime})
	must(w.Process(ctx, 0, values(20, "c1")))
	must(w.Watermark(ctx, 0, 60))
	must(w.Barrier(ctx, 2))

	snap, ok := any(w).(executor.StateSnapshotter)
	if !ok {
		t.Fatalf("%T is not a StateSnapshotter: the gate records nothing of the %T it wraps", w, inner)
	}
	blob, err := snap.SnapshotState(2)
	must(err)
	want, err := inner.SnapshotState(2)
	must(err)
	restored := twophasetest.Checkpoint(t, store, "st/0")

	again := executor.NewSDKStage(spec, &executor.Output{})
	r := &twophase.StableInput{Inner: again, Pending: twophase.NewPending(restored(), "st/0", "st[0] (stable input)")}
	rs, ok := any(r).(executor.StateRestorer)
	if !ok {
		t.Fatalf("%T is not a StateRestorer: a checkpoint's state of it cannot be restored", r)
	}
	must(rs.RestoreState(blob))
	got, err := again.SnapshotState(2)
	must(err)
	if string(got) != string(want) {
		t.Errorf("the restored stage holds\n %s\nwant\n %s", got, want)
	}
	if at, ok := r.NextWake(); !ok || !at.Equal(wake) {
		t.Errorf("the restored stage wakes at %v (%v), want %v for its processing-time timer", at, ok, wake)
	}
	// The gate hands the restored ports their watermarks: the epoch of
	// barrier 1 (c1) reaches the stage, waiting for the side input too,
	// and so does barrier 2's main input watermark, which the checkpoint
	// is complete for.
	must(r.Watermark(ctx, 0, 60))
	must(r.Watermark(ctx, 1, 50))
	after, err := again.SnapshotState(3)
	must(err)
	if !strings.Contains(string(after), `"waiting":[`) || len(after) <= len(got) {
		t.Errorf("after the restored ports' watermarks the stage holds %s; want c1 waiting too", after)
	}
	if wm := executor.MainWatermark(again); wm != 60 {
		t.Errorf("the restored stage was handed main input watermark %d, want 60, barrier 2's", wm)
	}
}
