package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/timers"
)

// restoreLog is an operator that logs what a restored gate hands it.
type restoreLog struct {
	log   []string
	state []byte
	fail  error
}

func (l *restoreLog) Process(_ context.Context, port int, elems [][]byte) error {
	for _, e := range elems {
		l.log = append(l.log, fmt.Sprintf("p%d:%s", port, e))
	}
	return nil
}
func (l *restoreLog) Watermark(_ context.Context, port int, wm mtime.Time) error {
	l.log = append(l.log, fmt.Sprintf("wm%d:%d", port, wm))
	return nil
}
func (l *restoreLog) Barrier(context.Context, BarrierID) error { return nil }
func (l *restoreLog) Finish(context.Context) error             { return nil }
func (l *restoreLog) RestoreState(b []byte) error {
	l.state = b
	l.log = append(l.log, "state:"+string(b))
	return l.fail
}

// statelessOp cannot restore state.
type statelessOp struct{ restoreLog }

func (statelessOp) RestoreState() {}

func encodeInFlight(batches ...[3]any) []byte {
	var f inFlight
	for _, b := range batches {
		f.add(b[0].(int), b[1].(int), [][]byte{[]byte(b[2].(string))})
	}
	return f.buf
}

// TestGateRestore: a restored gate gives the operator its state first,
// then each port's recorded watermark, then the in-flight data; after
// that, watermarks behind the recorded ones change nothing and data flows
// as usual.
func TestGateRestore(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		rs    *SubtaskRestore
		op    Operator
		after []Message // on channel 0 after the restore
		want  string
		err   string
	}{
		{"fresh: nothing before the first message", nil, &restoreLog{}, nil, "", ""},
		{"state, watermarks, in-flight in order",
			&SubtaskRestore{State: []byte("s"), Watermarks: []mtime.Time{100, 7},
				InFlight: encodeInFlight([3]any{2, 1, "x"}, [3]any{0, 0, "y"})},
			&restoreLog{}, nil, "state:s wm0:100 wm1:7 p1:x p0:y", ""},
		{"a restored upstream behind the recorded watermark is ignored until it passes it",
			&SubtaskRestore{Watermarks: []mtime.Time{100, mtime.MinTimestamp}}, &restoreLog{},
			[]Message{{Kind: KindWatermark, Watermark: 10}, {Kind: KindData, Elems: [][]byte{[]byte("z")}},
				{Kind: KindWatermark, Watermark: 150}},
			"wm0:100 p0:z", ""},
		{"both channels of port 0 must pass it",
			&SubtaskRestore{Watermarks: []mtime.Time{100}}, &restoreLog{},
			[]Message{{Kind: KindWatermark, Watermark: 150}}, "wm0:100", ""},
		{"state the operator cannot take", &SubtaskRestore{State: []byte("s")}, &statelessOp{}, nil, "", "cannot restore it"},
		{"operator refuses its state", &SubtaskRestore{State: []byte("s")}, &restoreLog{fail: errors.New("bad blob")}, nil, "", "bad blob"},
		{"too many watermarks", &SubtaskRestore{Watermarks: []mtime.Time{1, 2, 3}}, &restoreLog{}, nil, "", "3 port watermarks"},
		{"channels of another subtask", &SubtaskRestore{Channels: make([]ChannelMark, 5)}, &restoreLog{}, nil, "", "5 channels recorded"},
		{"channels replace the ports' watermarks",
			&SubtaskRestore{Watermarks: []mtime.Time{1, 1}, Channels: []ChannelMark{
				{Watermark: 100, InFlightWatermark: mtime.MinTimestamp}, {Watermark: 40, InFlightWatermark: 60},
				{Watermark: 7, InFlightWatermark: mtime.MinTimestamp}}},
			&restoreLog{}, nil, "wm0:40 wm1:7 wm0:60", ""},
		{"in-flight data of a channel it does not have", &SubtaskRestore{InFlight: encodeInFlight([3]any{5, 0, "x"})},
			&restoreLog{}, nil, "", "channel 5"},
		{"in-flight data on the wrong port", &SubtaskRestore{InFlight: encodeInFlight([3]any{0, 1, "x"})},
			&restoreLog{}, nil, "", "port 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Channels 0 and 1 on port 0, channel 2 on port 1.
			g := newGate(tc.op, &Output{}, func(BarrierID) {}, []int{0, 0, 1})
			err := g.restore(ctx, tc.rs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range tc.after {
				if err := g.handle(ctx, envelope{ch: 0, msg: m}); err != nil {
					t.Fatal(err)
				}
			}
			l := tc.op.(*restoreLog)
			if got := strings.Join(l.log, " "); got != tc.want {
				t.Errorf("operator saw %q, want %q", got, tc.want)
			}
		})
	}
}

// TestImpulseRestored: a restored Impulse that had fired emits nothing
// but its watermark; one that had not fires.
func TestImpulseRestored(t *testing.T) {
	for _, tc := range []struct {
		restored string
		elems    int
	}{{`{"fired":true}`, 0}, {`{"fired":false}`, 1}, {"", 1}} {
		out, ch := testOutput()
		inj := &Injector{ctx: context.Background(), in: make(chan BarrierID), out: out, ack: func(BarrierID) {}}
		if tc.restored != "" {
			inj.restored = []byte(tc.restored)
		}
		if err := (Impulse{}).Run(context.Background(), out, inj); err != nil {
			t.Fatal(err)
		}
		if got := countData(ch); got != tc.elems {
			t.Errorf("restored %q: %d elements, want %d", tc.restored, got, tc.elems)
		}
	}
	out, _ := testOutput()
	inj := &Injector{ctx: context.Background(), in: make(chan BarrierID), out: out, ack: func(BarrierID) {}, restored: []byte("{")}
	if err := (Impulse{}).Run(context.Background(), out, inj); err == nil {
		t.Error("a bad restored position was accepted")
	}
}

func testOutput() (*Output, chan envelope) {
	ch := make(chan envelope, 1024)
	return &Output{ports: [][]*edgeOut{{{to: []chan envelope{ch}, chIdx: []int{0}, name: "test"}}}}, ch
}

// drain returns what the output sent, as "e:<value>" per element (the
// value is the last byte), "wm:<t>" and "pt:<t>".
func drain(ch chan envelope) []string {
	var out []string
	for {
		select {
		case env := <-ch:
			switch env.msg.Kind {
			case KindData:
				for _, e := range env.msg.Elems {
					out = append(out, "e:"+string(e[len(e)-1:]))
				}
			case KindWatermark:
				out = append(out, fmt.Sprint("wm:", int64(env.msg.Watermark)))
			case KindProcessingTime:
				out = append(out, fmt.Sprint("pt:", int64(env.msg.Watermark)))
			}
		default:
			return out
		}
	}
}

func countData(ch chan envelope) int {
	n := 0
	for _, s := range drain(ch) {
		if strings.HasPrefix(s, "e:") {
			n++
		}
	}
	return n
}

// TestTestStreamRestored resumes a replay at recorded positions: the
// elements of an event already sent are not sent again, and the
// watermark and processing time start where they were.
func TestTestStreamRestored(t *testing.T) {
	events := []TestStreamEvent{
		{Kind: TestStreamElements, Elements: []TestStreamElement{{1, []byte("a")}, {2, []byte("b")}, {3, []byte("c")}}},
		{Kind: TestStreamWatermark, Watermark: 10},
		{Kind: TestStreamProcessingTime, AdvanceMillis: 7},
		{Kind: TestStreamElements, Elements: []TestStreamElement{{11, []byte("d")}}},
	}
	for _, tc := range []struct {
		pos  TestStreamPosition
		want string
	}{
		{TestStreamPosition{Next: 0, Watermark: mtime.MinTimestamp, ProcessingTime: 100},
			"pt:100 e:a e:b e:c wm:10 pt:107 e:d wm:9223372036854775"},
		{TestStreamPosition{Next: 0, Sent: 2, Watermark: mtime.MinTimestamp, ProcessingTime: 100},
			"pt:100 e:c wm:10 pt:107 e:d wm:9223372036854775"},
		{TestStreamPosition{Next: 2, Watermark: 10, ProcessingTime: 100},
			"wm:10 pt:100 pt:107 e:d wm:9223372036854775"},
		{TestStreamPosition{Next: 4, Watermark: 10, ProcessingTime: 107}, "wm:10 pt:107 wm:9223372036854775"},
	} {
		b, _ := json.Marshal(tc.pos)
		out, ch := testOutput()
		inj := &Injector{ctx: context.Background(), in: make(chan BarrierID), out: out, ack: func(BarrierID) {}, restored: b}
		src := &TestStream{Start: 999, Events: slices.Clone(events), Batch: 2}
		if err := src.Run(context.Background(), out, inj); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(drain(ch), " "); got != tc.want {
			t.Errorf("from %s:\n got %s\nwant %s", b, got, tc.want)
		}
	}
	for _, bad := range []string{`{"next_event":9}`, `{"next_event":-1}`, `[`} {
		out, _ := testOutput()
		inj := &Injector{ctx: context.Background(), in: make(chan BarrierID), out: out, ack: func(BarrierID) {}, restored: []byte(bad)}
		if err := (&TestStream{Events: events}).Run(context.Background(), out, inj); err == nil {
			t.Errorf("position %s was accepted", bad)
		}
	}
}

// TestSDKStageStateRoundTrip: what an SDK stage snapshots (timers,
// residuals, waiting elements) comes back whole in a new one.
func TestSDKStageStateRoundTrip(t *testing.T) {
	spec := &SDKStageSpec{Name: "st", SDF: true, Stateful: &StatefulSpec{Transform: "t"}}
	a := NewSDKStage(spec, &Output{})
	if b, err := a.SnapshotState(1); err != nil || b != nil {
		t.Fatalf("an idle stage snapshots %q, %v; want nothing", b, err)
	}
	a.timers.Set(timers.Timer{Transform: "t", Family: "f", Key: []byte("k1"), Fire: 20, Hold: 15, Encoded: []byte("T1")})
	a.timers.Set(timers.Timer{Transform: "t", Family: "f", Key: []byte("k2"), Fire: 10, Hold: 10, Encoded: []byte("T2"),
		Domain: timers.ProcessingTime})
	a.pending, a.resHold = [][]byte{[]byte("r1"), []byte("r2")}, 42
	a.waiting, a.waitHold = [][]byte{[]byte("w")}, 7
	b, err := a.SnapshotState(1)
	if err != nil {
		t.Fatal(err)
	}
	c := NewSDKStage(spec, &Output{})
	if err := c.RestoreState(b); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.timers.All()) != fmt.Sprint(a.timers.All()) || c.timers.Hold() != 10 {
		t.Errorf("timers %v, want %v", c.timers.All(), a.timers.All())
	}
	if fmt.Sprint(c.pending, c.resHold, c.bytes, c.waiting, c.waitHold) != fmt.Sprint(a.pending, a.resHold, 4, a.waiting, a.waitHold) {
		t.Errorf("restored pending %q (hold %d, %d bytes), waiting %q (hold %d)", c.pending, c.resHold, c.bytes, c.waiting, c.waitHold)
	}
	plain := NewSDKStage(&SDKStageSpec{Name: "plain"}, &Output{})
	if err := plain.RestoreState(b); err == nil {
		t.Error("a stage without timers or restrictions took timers and residuals")
	}
	// A stable-input wrapper's snapshot (twophase.StableInput) is not
	// taken as an empty one.
	wrapped := fmt.Sprintf(`{"stable_input":1,"given":0,"inner":%q}`, b)
	if err := NewSDKStage(spec, &Output{}).RestoreState([]byte(wrapped)); err == nil || !strings.Contains(err.Error(), "requires_stable_input") {
		t.Errorf("a stable-input wrapper's snapshot restored into the bare stage: %v", err)
	}
}

// onceSource emits one element, its restored state if it has one.
type onceSource struct{ restored *[]byte }

func (s onceSource) Run(ctx context.Context, out *Output, inj *Injector) error {
	*s.restored = inj.Restored()
	return out.Emit(ctx, 0, [][]byte{[]byte("new")})
}

// TestGraphRestore runs a restored graph: a source gets its recorded
// state, a source that had ended does not run, and the operator gets its
// state and in-flight data before anything its inputs send.
func TestGraphRestore(t *testing.T) {
	var restoredA, restoredB []byte
	op := &restoreLog{}
	g := &Graph{Nodes: []*Node{
		{Name: "a", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return onceSource{&restoredA}, nil }},
		{Name: "b", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return onceSource{&restoredB}, nil }},
		{Name: "op", Parallelism: 1, Inputs: []NodeInput{{From: 0}, {From: 1}},
			New: func(int, *Output) (Operator, error) { return op, nil }},
	}}
	g.Restore = func(node, sub int) *SubtaskRestore {
		switch node {
		case 0:
			return &SubtaskRestore{State: []byte("pos")}
		case 1:
			return &SubtaskRestore{Finished: true}
		}
		return &SubtaskRestore{State: []byte("s"), InFlight: encodeInFlight([3]any{1, 0, "old"})}
	}
	if err := g.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if string(restoredA) != "pos" || restoredB != nil {
		t.Errorf("sources restored %q and %q, want pos and the ended one not run", restoredA, restoredB)
	}
	if got := strings.Join(op.log, " "); got != "state:s p0:old p0:new wm0:9223372036854775" {
		t.Errorf("operator saw %q", got)
	}
}

// TestSDKStageSidesRoundTrip: a stage's snapshot carries its side inputs
// (an iterable and a multimap, binary windows and keys, keys in arrival
// order, watermarks), and the restored stage answers the same reads.
func TestSDKStageSidesRoundTrip(t *testing.T) {
	spec := &SDKStageSpec{Name: "st", SideInputs: []SideInputSpec{
		{TransformID: "t", LocalName: "iter"},
		{TransformID: "t", LocalName: "map", Multimap: true},
	}}
	a := NewSDKStage(spec, &Output{})
	if b, err := a.SnapshotState(1); err != nil || b != nil {
		t.Fatalf("a stage with empty side inputs snapshots %q, %v; want nothing", b, err)
	}
	it, mm := a.sides[0], a.sides[1]
	it.values["\x00\xff"] = []byte("abc")
	it.wm = 99
	w := "\x80\x01"
	mm.byKey[w] = map[string][]byte{"\xfek2": []byte("2"), "k1": []byte("11")}
	mm.keys[w] = []string{"\xfek2", "k1"}
	mm.wm = mtime.MaxTimestamp
	b, err := a.SnapshotState(1)
	if err != nil {
		t.Fatal(err)
	}
	c := NewSDKStage(spec, &Output{})
	if err := c.RestoreState(b); err != nil {
		t.Fatal(err)
	}
	for i := range a.sides {
		was, is := a.sides[i], c.sides[i]
		if fmt.Sprint(was.wm, was.values, was.byKey, was.keys) != fmt.Sprint(is.wm, is.values, is.byKey, is.keys) {
			t.Errorf("side input %s restored as wm %v %q %q %q, want wm %v %q %q %q", was.spec.LocalName,
				is.wm, is.values, is.byKey, is.keys, was.wm, was.values, was.byKey, was.keys)
		}
	}
	other := NewSDKStage(&SDKStageSpec{Name: "other", SideInputs: spec.SideInputs[:1]}, &Output{})
	if err := other.RestoreState(b); err == nil || !strings.Contains(err.Error(), `side input "map"`) {
		t.Errorf("a stage without the multimap side input restored it: %v", err)
	}
}
