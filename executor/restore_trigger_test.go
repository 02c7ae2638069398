package executor

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/triggers"
	"github.com/weir-runner/weir/wire"
)

// TestTriggeredGroupByKeyRestored: a triggered group restored after its
// on-time pane, handed its recorded input watermark again (as a restored
// gate does), fires nothing again; the next element makes the late pane
// over the restored values, numbered after the restored panes.
func TestTriggeredGroupByKeyRestored(t *testing.T) {
	tr, err := triggers.FromProto(&pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{
		LateFirings: &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: 1}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan envelope, 100)
	windows := memWindows(t)
	newOp := func() *TriggeredGroupByKey {
		return &TriggeredGroupByKey{Name: "gbk", In: wire.NewCodec(ivMeasure, func(b []byte) (int, error) { return len(b), nil }),
			Key: lpMeasure, OutputTime: pipepb.OutputTime_END_OF_WINDOW, Trigger: tr, Accumulating: true,
			AllowedLateness: 50, Out: &Output{ports: [][]*edgeOut{{{part: Forward, to: []chan envelope{ch}, chIdx: []int{0}}}}},
			Windows: windows}
	}
	ctx := context.Background()
	elem := func(g *TriggeredGroupByKey, ts mtime.Time) {
		val := append(binary.AppendUvarint(nil, 1), 'k', 'v')
		e := wire.AppendWindowedValue(nil, ts, wire.AppendIntervalWindow(nil, 0, 100), []byte{wire.PaneNoFiring}, val)
		if err := g.Process(ctx, 0, [][]byte{e}); err != nil {
			t.Fatal(err)
		}
	}
	panes := func() []string {
		var got []string
		for len(ch) > 0 {
			for _, e := range (<-ch).msg.Elems {
				got = append(got, paneString(t, e))
			}
		}
		return got
	}
	a := newOp()
	elem(a, 10)
	elem(a, 20)
	if err := a.Watermark(ctx, 0, 120); err != nil {
		t.Fatal(err)
	}
	if err := a.Barrier(ctx, 1); err != nil {
		t.Fatal(err)
	}
	blob, err := a.SnapshotState(1)
	if err != nil {
		t.Fatal(err)
	}
	if got := panes(); len(got) != 1 {
		t.Fatalf("before the snapshot: panes %q, want the on-time one", got)
	}
	// The restored operator, on the same store (what Import makes).
	b := newOp()
	if err := b.RestoreState(blob); err != nil {
		t.Fatal(err)
	}
	if err := b.Watermark(ctx, 0, 120); err != nil {
		t.Fatal(err)
	}
	elem(b, 30)
	got := fmt.Sprint(panes())
	want := fmt.Sprint([]string{"k@100 LATE 1/1 first=false last=false n=3 ts=99"})
	if got != want {
		t.Errorf("restored: panes %s, want %s", got, want)
	}
}
