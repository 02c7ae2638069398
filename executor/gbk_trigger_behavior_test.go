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

// The on-time and closing behaviors: with early firings that took every
// element, the on-time pane fires anyway under OnTimeAlways (Java's
// default, FIRE_ALWAYS), holding what accumulated or nothing; at expiry the
// final pane fires anyway under FinalAlways (EMIT_ALWAYS), marked last.
// Without them a pane with nothing new does not fire.
func TestTriggeredGroupByKeyEmptyPanes(t *testing.T) {
	early2 := &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{
		EarlyFirings: &pipepb.Trigger{Trigger: &pipepb.Trigger_Repeat_{Repeat: &pipepb.Trigger_Repeat{Subtrigger: &pipepb.Trigger{
			Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: 2}}}}}},
		LateFirings: &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: 1}}}}}}
	for _, tc := range []struct {
		name                      string
		accumulating              bool
		finalAlways, onTimeAlways bool
		want                      []string
	}{
		{"if non-empty", true, false, false, []string{
			"k@100 EARLY 0/-1 first=true last=false n=2 ts=99",
		}},
		{"on time always, accumulating", true, false, true, []string{
			"k@100 EARLY 0/-1 first=true last=false n=2 ts=99",
			"k@100 ON_TIME 1/0 first=false last=false n=2 ts=99",
		}},
		{"on time always, discarding", false, false, true, []string{
			"k@100 EARLY 0/-1 first=true last=false n=2 ts=99",
			"k@100 ON_TIME 1/0 first=false last=false n=0 ts=99",
		}},
		{"both always, accumulating", true, true, true, []string{
			"k@100 EARLY 0/-1 first=true last=false n=2 ts=99",
			"k@100 ON_TIME 1/0 first=false last=false n=2 ts=99",
			"k@100 LATE 2/1 first=false last=true n=2 ts=99",
		}},
		{"final always, discarding", false, true, false, []string{
			"k@100 EARLY 0/-1 first=true last=false n=2 ts=99",
			"k@100 LATE 1/0 first=false last=true n=0 ts=99",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := triggers.FromProto(early2)
			if err != nil {
				t.Fatal(err)
			}
			ch := make(chan envelope, 100)
			out := &Output{ports: [][]*edgeOut{{{part: Forward, to: []chan envelope{ch}, chIdx: []int{0}}}}}
			g := &TriggeredGroupByKey{Name: "gbk", In: wire.NewCodec(ivMeasure, func(b []byte) (int, error) { return len(b), nil }),
				Key: lpMeasure, OutputTime: pipepb.OutputTime_END_OF_WINDOW, Trigger: tr, Accumulating: tc.accumulating,
				AllowedLateness: 50, FinalAlways: tc.finalAlways, OnTimeAlways: tc.onTimeAlways, Out: out, Windows: memWindows(t)}
			ctx := context.Background()
			for _, ts := range []mtime.Time{10, 20} { // the early pane takes both
				val := append(binary.AppendUvarint(nil, 1), 'k', 'v')
				e := wire.AppendWindowedValue(nil, ts, wire.AppendIntervalWindow(nil, 0, 100), []byte{wire.PaneNoFiring}, val)
				if err := g.Process(ctx, 0, [][]byte{e}); err != nil {
					t.Fatal(err)
				}
			}
			for _, wm := range []mtime.Time{100, 151} { // on time, then expired
				if err := g.Watermark(ctx, 0, wm); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for len(ch) > 0 {
				for _, e := range (<-ch).msg.Elems {
					got = append(got, paneString(t, e))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("panes:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
