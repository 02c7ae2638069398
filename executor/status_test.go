package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/watermarkmgr"
	"github.com/weir-runner/weir/wire"
)

// captureOutput is an Output of one edge to one consumer whose messages
// land in a channel the test reads.
func captureOutput(stats *subtaskStats) (*Output, chan envelope) {
	ch := make(chan envelope, 64)
	e := &edgeOut{to: []chan envelope{ch}, chIdx: []int{0}}
	return &Output{ports: [][]*edgeOut{{e}}, stats: stats}, ch
}

// drained returns what an Output sent, as "wm:T", "idle", "active",
// "data:N" and "end".
func drained(ch chan envelope) []string {
	var out []string
	for {
		select {
		case env := <-ch:
			m := env.msg
			switch m.Kind {
			case KindWatermark:
				out = append(out, fmt.Sprint("wm:", int64(m.Watermark)))
			case KindStatus:
				out = append(out, m.Status.String())
			case KindData:
				out = append(out, fmt.Sprint("data:", len(m.Elems)))
			case KindEnd:
				out = append(out, "end")
			}
		default:
			return out
		}
	}
}

// at is an element at event time t, as edges carry them (the windowed
// value's timestamp first).
func at(t mtime.Time) []byte { return wire.AppendWindowedValue(nil, t, nil, []byte{0x0f}, []byte("v")) }

// TestGateChannelStatus drives a subtask of three channels, two on port 0
// and one on port 1, with status messages as source subtasks send them:
// an idle channel leaves its port's minimum, a subtask whose live inputs
// are all idle tells its consumers, a channel back from idleness does not
// take the watermark back and its elements behind it are counted late, and
// an end while the rest is idle leaves the subtask idle.
func TestGateChannelStatus(t *testing.T) {
	ctx := context.Background()
	op := &wmLog{}
	stats := newSubtaskStats()
	out, sent := captureOutput(stats)
	g := newGate(op, out, func(BarrierID) {}, []int{0, 0, 1})
	g.stats = stats
	msg := func(ch int, m Message) {
		t.Helper()
		if err := g.handle(ctx, envelope{ch, m}); err != nil {
			t.Fatal(err)
		}
	}
	wm := func(ch int, t mtime.Time) { msg(ch, Message{Kind: KindWatermark, Watermark: t}) }
	status := func(ch int, st watermarkmgr.Status) { msg(ch, Message{Kind: KindStatus, Status: st}) }
	check := func(step string, calls []string, out []string) {
		t.Helper()
		if !slices.Equal(op.calls, calls) {
			t.Errorf("%s: operator heard %v, want %v", step, op.calls, calls)
		}
		if got := drained(sent); !slices.Equal(got, out) {
			t.Errorf("%s: the subtask sent %v, want %v", step, got, out)
		}
		op.calls = nil
	}

	wm(0, 10)
	wm(1, 30)
	wm(2, 5)
	check("start", []string{"port0=10", "port1=5"}, nil)

	status(0, watermarkmgr.StatusIdle)
	check("channel 0 idle: port 0 follows channel 1", []string{"port0=30"}, nil)

	status(2, watermarkmgr.StatusIdle)
	check("port 1 idle too: it stays", nil, nil)
	status(1, watermarkmgr.StatusIdle)
	check("every channel idle: the subtask says so", nil, []string{"idle"})

	// Channel 0 comes back at 10: nothing moves back, the subtask is
	// active again, and of its elements those behind port 0's 30 are late.
	status(0, watermarkmgr.StatusActive)
	check("channel 0 back", nil, []string{"active"})
	msg(0, Message{Kind: KindData, Elems: [][]byte{at(12), at(29), at(30), at(40)}})
	if n := stats.lateIn.Load(); n != 2 {
		t.Errorf("late elements: %d, want 2", n)
	}
	wm(0, 35)
	check("channel 0 catches up", []string{"port0=35"}, nil)
	msg(0, Message{Kind: KindData, Elems: [][]byte{at(1)}})
	if n := stats.lateIn.Load(); n != 2 {
		t.Errorf("late elements from a channel in step: %d, want still 2 (its elements are not looked at)", n)
	}

	// Channel 0 ends while the others are idle: nothing live is active.
	msg(0, Message{Kind: KindEnd})
	check("channel 0 ends", nil, []string{"idle"})
	// A watermark counts an idle channel again.
	wm(2, 50)
	check("a watermark on idle channel 2", []string{"port1=50"}, []string{"active"})
}

// TestOutputHoldsWatermarksWhileIdle: an idle subtask sends no watermark;
// the newest it held back follows its next active.
func TestOutputHoldsWatermarksWhileIdle(t *testing.T) {
	ctx := context.Background()
	out, sent := captureOutput(newSubtaskStats())
	do := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	do(out.Watermark(ctx, 10))
	do(out.Status(ctx, watermarkmgr.StatusIdle))
	do(out.Watermark(ctx, 20))
	do(out.Watermark(ctx, 30))
	do(out.Status(ctx, watermarkmgr.StatusIdle))
	do(out.Emit(ctx, 0, [][]byte{at(25)}))
	do(out.Status(ctx, watermarkmgr.StatusActive))
	do(out.Watermark(ctx, 40))
	do(out.end(ctx))
	want := []string{"wm:10", "idle", "data:1", "active", "wm:30", "wm:40", "end"}
	if got := drained(sent); !slices.Equal(got, want) {
		t.Errorf("sent %v, want %v", got, want)
	}
	if !slices.Equal(nil, drained(sent)) {
		t.Error("more was sent")
	}
}

// TestGateStatusCheckpoint: a snapshot records which channels are idle,
// and the newest status an unaligned barrier overtook; a subtask restored
// from it leaves those channels out of its minimum, takes the overtaken
// status after the in-flight data, and tells its consumers its status
// whatever it is, since they were restored with the channel as it was.
func TestGateStatusCheckpoint(t *testing.T) {
	ctx := context.Background()
	l := &laneOp{}
	l.canSw = true // unaligned from the start
	in := &inbox{data: newLane(64), prio: make(chan envelope, 8)}
	g := newGate(l, &Output{}, func(BarrierID) {}, []int{0, 0, 0})
	g.cp, g.node, g.sub, g.now, g.scan = l, 3, 1, func() time.Time { return gateT0 }, in.scan
	edges := make([]*edgeOut, 3)
	for i := range edges {
		edges[i] = &edgeOut{lanes: []*lane{in.data}, prio: []chan envelope{in.prio}, chIdx: []int{i}}
	}
	send := func(ch int, m Message) {
		t.Helper()
		if err := edges[ch].send(ctx, 0, m); err != nil {
			t.Fatal(err)
		}
	}
	drain := func() {
		t.Helper()
		for {
			ok, err := in.pump(ctx, g)
			if !ok && err == nil {
				ok, err = in.next(ctx, g)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return
			}
		}
	}
	wm := func(t mtime.Time) Message { return Message{Kind: KindWatermark, Watermark: t} }
	idle := Message{Kind: KindStatus, Status: watermarkmgr.StatusIdle}
	send(0, wm(10))
	send(1, wm(20))
	send(2, wm(5))
	send(2, idle)
	drain()
	// Channel 1's idle is in the lane when the barrier overtakes it.
	send(1, idle)
	for ch := range edges {
		if err := edges[ch].sendBarrier(ctx, 0, 1); err != nil {
			t.Fatal(err)
		}
	}
	drain()
	if len(l.done) != 1 || !l.done[0].Unaligned {
		t.Fatalf("records %+v, want one of an unaligned barrier", l.done)
	}
	marks := l.done[0].Channels
	if !marks[2].Idle || marks[0].Idle || marks[1].Idle || !marks[1].InFlightIdle || marks[0].InFlightIdle || marks[2].InFlightIdle {
		t.Fatalf("recorded channels %+v: want channel 2 idle, channel 1's idle in flight", marks)
	}

	again := &laneOp{}
	out, sent := captureOutput(nil)
	h := newGate(again, out, func(BarrierID) {}, []int{0, 0, 0})
	if err := h.restore(ctx, &SubtaskRestore{Channels: marks, InFlight: l.done[0].InFlight}); err != nil {
		t.Fatal(err)
	}
	// Channel 2 (5) is left out, then channel 1's overtaken idle: 10.
	if got, want := strings.Join(again.log, " "), "wm0:10"; got != want {
		t.Errorf("the restored operator heard %q, want %q", got, want)
	}
	if got := drained(sent); !slices.Equal(got, []string{"active"}) {
		t.Errorf("the restored subtask sent %v, want [active]", got)
	}
	// Channel 0 goes idle: every channel is, and the consumers hear it.
	if err := h.handle(ctx, envelope{0, idle}); err != nil {
		t.Fatal(err)
	}
	if got := drained(sent); !slices.Equal(got, []string{"idle"}) {
		t.Errorf("then sent %v, want [idle]", got)
	}
}

// statusSource emits the script its subtask is given: "wm:T", "idle",
// "active", "data:T" (an element at T), "wait" (until wait is closed),
// "signal" (closes signal), then ends.
type statusSource struct {
	script       []string
	wait, signal chan struct{}
}

func (s *statusSource) Run(ctx context.Context, out *Output, inj *Injector) error {
	for _, step := range s.script {
		switch step {
		case "signal":
			close(s.signal)
			continue
		case "wait":
			select {
			case <-s.wait:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		var err error
		switch {
		case step == "idle":
			err = out.Status(ctx, watermarkmgr.StatusIdle)
		case step == "active":
			err = out.Status(ctx, watermarkmgr.StatusActive)
		case strings.HasPrefix(step, "wm:"):
			var t int64
			fmt.Sscan(step[3:], &t)
			err = out.Watermark(ctx, mtime.Time(t))
		case strings.HasPrefix(step, "data:"):
			var t int64
			fmt.Sscan(step[5:], &t)
			err = out.Emit(ctx, 0, [][]byte{at(mtime.Time(t))})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// passOn forwards its input watermarks, as a stage between a source and a
// sink does.
type passOn struct{ out *Output }

func (r *passOn) Process(ctx context.Context, _ int, elems [][]byte) error {
	return r.out.Emit(ctx, 0, elems)
}
func (r *passOn) Watermark(ctx context.Context, _ int, wm mtime.Time) error {
	return r.out.Watermark(ctx, wm)
}
func (r *passOn) Barrier(context.Context, BarrierID) error { return nil }
func (r *passOn) Finish(context.Context) error             { return nil }

// sinkLog records the watermarks its subtask hears.
type sinkLog struct {
	mu  *sync.Mutex
	wms *[]mtime.Time
}

func (s sinkLog) Process(context.Context, int, [][]byte) error { return nil }
func (s sinkLog) Watermark(_ context.Context, _ int, wm mtime.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.wms = append(*s.wms, wm)
	return nil
}
func (s sinkLog) Barrier(context.Context, BarrierID) error { return nil }
func (s sinkLog) Finish(context.Context) error             { return nil }

// TestIdleSourceSubtaskHoldsNothing runs a source of two subtasks, one of
// which owns nothing and says idle at once (FLINK-32414), through a stage
// of two subtasks into a sink. The sink's watermark follows the active
// source subtask alone: the relay subtasks pass only its watermark on, and
// neither is idle, since each has an active input. Without the status the
// idle subtask's silence (-inf) would hold every consumer until the end.
func TestIdleSourceSubtaskHoldsNothing(t *testing.T) {
	var mu sync.Mutex
	var wms []mtime.Time
	// The active subtask starts once the other has said idle, and the
	// idle one ends only once the other has sent everything, so that its
	// end cannot be what lets the watermarks through.
	said, sent := make(chan struct{}), make(chan struct{})
	sources := []*statusSource{
		{script: []string{"wait", "wm:10", "data:11", "wm:20", "data:21", "wm:30", "signal"}, wait: said, signal: sent},
		{script: []string{"idle", "signal", "wait"}, wait: sent, signal: said},
	}
	g := &Graph{Nodes: []*Node{
		{Name: "src", Parallelism: 2, Outputs: 1, NewSource: func(sub int, _ *Output) (Source, error) {
			return sources[sub], nil
		}},
		{Name: "relay", Parallelism: 2, Outputs: 1, Inputs: []NodeInput{{From: 0, Partition: Forward}},
			New: func(_ int, out *Output) (Operator, error) { return &passOn{out: out}, nil }},
		{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{From: 1, Partition: Forward}},
			New: func(int, *Output) (Operator, error) { return sinkLog{&mu, &wms}, nil }},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := g.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	want := []mtime.Time{10, 20, 30, mtime.MaxTimestamp}
	if !slices.Equal(wms, want) {
		t.Errorf("the sink heard watermarks %v, want %v", wms, want)
	}
}
