package executor

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/triggers"
	"github.com/weir-runner/weir/wire"
)

func ivMeasure(b []byte) (int, error) {
	if len(b) < 9 {
		return 0, wire.ErrShort
	}
	_, n := binary.Uvarint(b[8:])
	return 8 + n, nil
}

// paneString renders an emitted pane: window end, timing, index, on-time
// index, first/last and the number of values.
func paneString(t *testing.T, e []byte) string {
	t.Helper()
	wv, _, err := wire.NewCodec(ivMeasure, func(b []byte) (int, error) { return len(b), nil }).Decode(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, end, _ := wire.DecodeIntervalWindow(wv.Windows[0])
	k, rest, err := wire.SplitKV(lpMeasure, wv.Value)
	if err != nil {
		t.Fatal(err)
	}
	p := wv.Pane
	timing := triggers.Timing(p[0] >> 2 & 3)
	idx, on := int64(0), int64(0)
	switch p[0] >> 4 {
	case 1:
		u, _ := binary.Uvarint(p[1:])
		idx, on = int64(u), int64(u)
		if timing == triggers.Early {
			on = -1
		}
	case 2:
		u, n := binary.Uvarint(p[1:])
		v, _ := binary.Uvarint(p[1+n:])
		idx, on = int64(u), int64(v)
	}
	return fmt.Sprintf("%s@%d %v %d/%d first=%v last=%v n=%d ts=%d", k[1:], end, timing, idx, on,
		p[0]&1 != 0, p[0]&2 != 0, binary.BigEndian.Uint32(rest), wv.Timestamp)
}

// memWindows is a window store in a store in memory.
func memWindows(t *testing.T) *state.TriggerWindows {
	t.Helper()
	s, err := state.Open(state.Options{Dir: "trig", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.NewTriggerWindows("gbk/0")
}

func TestTriggeredGroupByKeyPanes(t *testing.T) {
	// AfterWatermark with early firings every 2 elements and late firings
	// after each element, accumulating, 50 ms allowed lateness.
	count := func(n int32) *pipepb.Trigger {
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: n}}}
	}
	rep := func(s *pipepb.Trigger) *pipepb.Trigger {
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_Repeat_{Repeat: &pipepb.Trigger_Repeat{Subtrigger: s}}}
	}
	tr, err := triggers.FromProto(&pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{
		EarlyFirings: rep(count(2)), LateFirings: count(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan envelope, 100)
	out := &Output{ports: [][]*edgeOut{{{part: Forward, to: []chan envelope{ch}, chIdx: []int{0}}}}}
	g := &TriggeredGroupByKey{Name: "gbk", In: wire.NewCodec(ivMeasure, func(b []byte) (int, error) { return len(b), nil }),
		Key: lpMeasure, OutputTime: pipepb.OutputTime_END_OF_WINDOW, Trigger: tr, Accumulating: true,
		AllowedLateness: 50, Out: out, Windows: memWindows(t)}
	ctx := context.Background()
	elem := func(ts mtime.Time) {
		val := append(binary.AppendUvarint(nil, 1), 'k', 'v')
		e := wire.AppendWindowedValue(nil, ts, wire.AppendIntervalWindow(nil, 0, 100), []byte{wire.PaneNoFiring}, val)
		if err := g.Process(ctx, 0, [][]byte{e}); err != nil {
			t.Fatal(err)
		}
	}
	wm := func(w mtime.Time) {
		if err := g.Watermark(ctx, 0, w); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	drain := func() {
		for {
			select {
			case env := <-ch:
				for _, e := range env.msg.Elems {
					got = append(got, paneString(t, e))
				}
			default:
				return
			}
		}
	}
	elem(10)
	elem(20) // early pane of 2
	elem(30)
	wm(100)  // on-time pane of 3
	elem(40) // late pane of 4
	wm(149)
	elem(50) // late pane of 5
	wm(151)  // expired: nothing new, no pane
	elem(60) // dropped as late
	drain()
	want := []string{
		"k@100 EARLY 0/-1 first=true last=false n=2 ts=99",
		"k@100 ON_TIME 1/0 first=false last=false n=3 ts=99",
		"k@100 LATE 2/1 first=false last=false n=4 ts=99",
		"k@100 LATE 3/2 first=false last=false n=5 ts=99",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("panes:\n got %q\nwant %q", got, want)
	}
	if g.DroppedLate != 1 || g.DroppedClosed != 0 {
		t.Errorf("dropped late %d closed %d, want 1 and 0", g.DroppedLate, g.DroppedClosed)
	}
}

// A trigger that finishes closes a bounded window, and later elements are
// dropped; in the global window it starts over instead.
func TestTriggeredGroupByKeyFinishedTrigger(t *testing.T) {
	count2 := &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: 2}}}
	for _, tc := range []struct {
		name        string
		window      []byte
		measure     wire.Measure
		wantPanes   []int // values per pane
		wantDropped int64
	}{
		{"fixed window closes", wire.AppendIntervalWindow(nil, 0, 100), ivMeasure, []int{2}, 1},
		{"global window starts over", nil, func([]byte) (int, error) { return 0, nil }, []int{2, 1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := triggers.FromProto(count2)
			if err != nil {
				t.Fatal(err)
			}
			ch := make(chan envelope, 100)
			out := &Output{ports: [][]*edgeOut{{{part: Forward, to: []chan envelope{ch}, chIdx: []int{0}}}}}
			in := wire.NewCodec(tc.measure, func(b []byte) (int, error) { return len(b), nil })
			g := &TriggeredGroupByKey{Name: "gbk", In: in, Key: lpMeasure, OutputTime: pipepb.OutputTime_END_OF_WINDOW,
				Trigger: tr, Out: out, Windows: memWindows(t)}
			ctx := context.Background()
			for ts := mtime.Time(10); ts <= 30; ts += 10 {
				val := append(binary.AppendUvarint(nil, 1), 'k', 'v')
				e := wire.AppendWindowedValue(nil, ts, tc.window, []byte{wire.PaneNoFiring}, val)
				if err := g.Process(ctx, 0, [][]byte{e}); err != nil {
					t.Fatal(err)
				}
			}
			if err := g.Watermark(ctx, 0, mtime.MaxTimestamp); err != nil {
				t.Fatal(err)
			}
			var got []int
			for len(ch) > 0 {
				env := <-ch
				for _, e := range env.msg.Elems {
					wv, _, err := in.Decode(e, nil)
					if err != nil {
						t.Fatal(err)
					}
					_, rest, err := wire.SplitKV(lpMeasure, wv.Value)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, int(binary.BigEndian.Uint32(rest)))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantPanes) || g.DroppedClosed != tc.wantDropped {
				t.Errorf("panes %v dropped %d, want %v and %d", got, g.DroppedClosed, tc.wantPanes, tc.wantDropped)
			}
		})
	}
}

// TestTriggeredGroupByKeyWakes: processing-time deadlines come from the
// heap: NextWake names the earliest, and Wake fires only the windows due.
func TestTriggeredGroupByKeyWakes(t *testing.T) {
	delay := &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterProcessingTime_{AfterProcessingTime: &pipepb.Trigger_AfterProcessingTime{
		TimestampTransforms: []*pipepb.TimestampTransform{{TimestampTransform: &pipepb.TimestampTransform_Delay_{
			Delay: &pipepb.TimestampTransform_Delay{DelayMillis: 10}}}}}}}
	tr, err := triggers.FromProto(&pipepb.Trigger{Trigger: &pipepb.Trigger_Repeat_{Repeat: &pipepb.Trigger_Repeat{Subtrigger: delay}}})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.UnixMilli(1000)
	ch := make(chan envelope, 100)
	out := &Output{ports: [][]*edgeOut{{{part: Forward, to: []chan envelope{ch}, chIdx: []int{0}}}}}
	g := &TriggeredGroupByKey{Name: "gbk", In: wire.NewCodec(ivMeasure, func(b []byte) (int, error) { return len(b), nil }),
		Key: lpMeasure, OutputTime: pipepb.OutputTime_END_OF_WINDOW, Trigger: tr, Out: out, Windows: memWindows(t),
		Now: func() time.Time { return clock }}
	ctx := context.Background()
	elem := func(start mtime.Time) {
		val := append(binary.AppendUvarint(nil, 1), 'k', 'v')
		e := wire.AppendWindowedValue(nil, start, wire.AppendIntervalWindow(nil, start, start+100), []byte{wire.PaneNoFiring}, val)
		if err := g.Process(ctx, 0, [][]byte{e}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := g.NextWake(); ok {
		t.Fatal("a wake-up before any element")
	}
	elem(0) // deadline 1010
	clock = clock.Add(5 * time.Millisecond)
	elem(100) // deadline 1015
	elem(0)
	if at, ok := g.NextWake(); !ok || at.UnixMilli() != 1010 {
		t.Fatalf("NextWake = %v, %v; want 1010", at.UnixMilli(), ok)
	}
	if err := g.Wake(ctx, time.UnixMilli(1012)); err != nil {
		t.Fatal(err)
	}
	var got []string
	drain := func() {
		for len(ch) > 0 {
			for _, e := range (<-ch).msg.Elems {
				got = append(got, paneString(t, e))
			}
		}
	}
	drain()
	if len(got) != 1 || !strings.HasPrefix(got[0], "k@100 EARLY 0/-1") || !strings.Contains(got[0], "n=2") {
		t.Fatalf("after the first wake-up: %q", got)
	}
	if at, ok := g.NextWake(); !ok || at.UnixMilli() != 1015 {
		t.Fatalf("NextWake = %v, %v; want 1015", at.UnixMilli(), ok)
	}
	if err := g.Wake(ctx, time.UnixMilli(1015)); err != nil {
		t.Fatal(err)
	}
	drain()
	if len(got) != 2 || !strings.HasPrefix(got[1], "k@200 EARLY 0/-1") {
		t.Fatalf("after the second wake-up: %q", got)
	}
	if _, ok := g.NextWake(); ok {
		t.Error("a wake-up with nothing armed")
	}
}

// TestTriggeredGroupByKeyCorruptWindow: a metadata record the operator
// cannot read fails the transform with its name, never a panic.
func TestTriggeredGroupByKeyCorruptWindow(t *testing.T) {
	tr, err := triggers.FromProto(nil)
	if err != nil {
		t.Fatal(err)
	}
	ws := memWindows(t)
	win := wire.AppendIntervalWindow(nil, 0, 100)
	key := append(binary.AppendUvarint(nil, 1), 'k')
	for _, bad := range [][]byte{{0}, {0, 1, 2, 4, 9}, {0, 0, 0, 0, 1, 1, 0}} {
		id := state.WindowID{KeyGroup: KeyGroup(key), End: 99, Key: key, Window: win}
		if err := ws.SetMeta(id, bad); err != nil {
			t.Fatal(err)
		}
		g := &TriggeredGroupByKey{Name: "Sum/GBK", In: wire.NewCodec(ivMeasure, func(b []byte) (int, error) { return len(b), nil }),
			Key: lpMeasure, Trigger: tr, AllowedLateness: 5, Windows: ws}
		e := wire.AppendWindowedValue(nil, 10, win, []byte{wire.PaneNoFiring}, append(key, 'v'))
		if err := g.Process(context.Background(), 0, [][]byte{e}); err == nil || !strings.Contains(err.Error(), "group by key Sum/GBK") {
			t.Errorf("metadata %x: error %v, want one naming the transform", bad, err)
		}
	}
}
