package executor

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/triggers"
	"github.com/weir-runner/weir/wire"
)

// TestTriggeredSessions plays elements of key k into sessions with a gap of
// 10 ms ("e:TS") and watermarks ("wm:T"), and checks the panes. Sessions
// [0,11) and [18,29) each fire early, then the element at 9 bridges them
// into [0,29), whose panes continue from theirs.
func TestTriggeredSessions(t *testing.T) {
	count := func(n int32) *pipepb.Trigger {
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: n}}}
	}
	earlyCount2 := &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{
		EarlyFirings: count(2)}}}
	const bridge = "e:0 e:1 e:18 e:19 e:9 e:10 e:12 wm:100 e:5"
	tests := []struct {
		name         string
		trigger      *pipepb.Trigger
		accumulating bool
		script       string
		want         []string
		late, closed int64
	}{
		{"accumulating early firings across a merge", earlyCount2, true, bridge, []string{
			"k@11 EARLY 0/-1 first=true last=false n=2 ts=10",
			"k@29 EARLY 0/-1 first=true last=false n=2 ts=28",
			"k@29 EARLY 1/-1 first=false last=false n=6 ts=28",
			"k@29 ON_TIME 2/0 first=false last=true n=7 ts=28",
		}, 1, 0},
		{"discarding early firings across a merge", earlyCount2, false, bridge, []string{
			"k@11 EARLY 0/-1 first=true last=false n=2 ts=10",
			"k@29 EARLY 0/-1 first=true last=false n=2 ts=28",
			"k@29 EARLY 1/-1 first=false last=false n=2 ts=28",
			"k@29 ON_TIME 2/0 first=false last=true n=1 ts=28",
		}, 1, 0},
		{"a merge into a closed session drops the element", count(2), false, "e:0 e:1 e:5 e:30 wm:100", []string{
			"k@11 EARLY 0/-1 first=true last=true n=2 ts=10",
			"k@40 ON_TIME 0/0 first=true last=true n=1 ts=39",
		}, 0, 1},
		{"a fired session that grows numbers its panes on", nil, false, "e:0 wm:12 e:8 wm:30 e:1", []string{
			"k@10 ON_TIME 0/0 first=true last=false n=1 ts=9",
			"k@18 LATE 1/1 first=false last=true n=1 ts=17",
		}, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := triggers.FromProto(tc.trigger)
			if err != nil {
				t.Fatal(err)
			}
			ch := make(chan envelope, 100)
			out := &Output{ports: [][]*edgeOut{{{part: Forward, to: []chan envelope{ch}, chIdx: []int{0}}}}}
			g := &TriggeredGroupByKey{Name: "gbk", In: wire.NewCodec(ivMeasure, func(b []byte) (int, error) { return len(b), nil }),
				Key: lpMeasure, OutputTime: pipepb.OutputTime_END_OF_WINDOW, Trigger: tr, Accumulating: tc.accumulating,
				Merging: true, AllowedLateness: 5, Out: out, Windows: memWindows(t)}
			playSessions(t, g, tc.script)
			var got []string
			for len(ch) > 0 {
				if env := <-ch; env.msg.Kind == KindData {
					for _, e := range env.msg.Elems {
						got = append(got, paneString(t, e))
					}
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("panes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if g.DroppedLate != tc.late || g.DroppedClosed != tc.closed {
				t.Errorf("dropped late %d closed %d, want %d and %d", g.DroppedLate, g.DroppedClosed, tc.late, tc.closed)
			}
		})
	}
}

func playSessions(t *testing.T, g *TriggeredGroupByKey, script string) {
	t.Helper()
	ctx := context.Background()
	for _, ev := range strings.Fields(script) {
		op, arg, _ := strings.Cut(ev, ":")
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			t.Fatalf("bad event %q", ev)
		}
		ts := mtime.Time(n)
		switch op {
		case "e":
			val := append(binary.AppendUvarint(nil, 1), 'k', 'v')
			e := wire.AppendWindowedValue(nil, ts, wire.AppendIntervalWindow(nil, ts, ts+10), []byte{wire.PaneNoFiring}, val)
			err = g.Process(ctx, 0, [][]byte{e})
		case "wm":
			err = g.Watermark(ctx, 0, ts)
		default:
			err = fmt.Errorf("bad event %q", ev)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// countingWindows counts the values written to the store.
type countingWindows struct {
	TriggerWindows
	appends int
}

func (c *countingWindows) Append(id state.WindowID, v []byte) error {
	c.appends++
	return c.TriggerWindows.Append(id, v)
}

// TestTriggeredSessionsMoveNoValuesToGrow: a session that each element
// extends takes its values over rather than copying them (which cost the
// square of a session's length: Nexmark's query 11), and a bridge between
// two long sessions moves only the other's values. The pane, read after the
// window was written back and loaded by the watermark, holds every value.
func TestTriggeredSessionsMoveNoValuesToGrow(t *testing.T) {
	tr, err := triggers.FromProto(nil)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan envelope, 10)
	out := &Output{ports: [][]*edgeOut{{{part: Forward, to: []chan envelope{ch}, chIdx: []int{0}}}}}
	w := &countingWindows{TriggerWindows: memWindows(t)}
	g := &TriggeredGroupByKey{Name: "gbk", In: wire.NewCodec(ivMeasure, func(b []byte) (int, error) { return len(b), nil }),
		Key: lpMeasure, OutputTime: pipepb.OutputTime_END_OF_WINDOW, Trigger: tr, Merging: true, Out: out, Windows: w}
	ctx := context.Background()
	var sent []byte
	play := func(from, to mtime.Time) {
		for ts := from; ts < to; ts += 5 { // gap 10: each element extends the session
			v := byte(len(sent))
			sent = append(sent, v)
			e := wire.AppendWindowedValue(nil, ts, wire.AppendIntervalWindow(nil, ts, ts+10), []byte{wire.PaneNoFiring},
				append(binary.AppendUvarint(nil, 1), 'k', v))
			if err := g.Process(ctx, 0, [][]byte{e}); err != nil {
				t.Fatal(err)
			}
		}
	}
	play(0, 100)   // [0,105): 20 values
	play(200, 240) // [200,245): 8 values
	play(100, 200) // 20 more, the last bridging both into [0,245)
	if want := len(sent) + 8; w.appends != want {
		t.Errorf("%d values written for %d elements, want %d (the second session's 8 moved once)", w.appends, len(sent), want)
	}
	if err := g.Watermark(ctx, 0, 1000); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for len(ch) > 0 {
		env := <-ch
		for _, e := range env.msg.Elems {
			if s := paneString(t, e); !strings.HasPrefix(s, "k@245 ON_TIME") {
				t.Errorf("pane %s, want k@245 ON_TIME", s)
			}
			wv, _, err := g.In.Decode(e, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, rest, err := wire.SplitKV(lpMeasure, wv.Value)
			if err != nil || len(rest) < 4 || int(binary.BigEndian.Uint32(rest)) != len(rest)-4 {
				t.Fatalf("pane value %x: %v", wv.Value, err)
			}
			got = append(got, rest[4:]...)
		}
	}
	slices.Sort(got)
	if !bytes.Equal(got, sent) {
		t.Errorf("pane values %v, want %v", got, sent)
	}
}
