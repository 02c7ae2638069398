package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

var gateT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ckptLog is an operator and a Checkpointer writing one log, so a test
// sees the order of processing and snapshots.
type ckptLog struct {
	log      []string
	switchAt time.Time
	canSw    bool
	done     []BarrierRecord
}

func (l *ckptLog) Process(_ context.Context, port int, elems [][]byte) error {
	for _, e := range elems {
		l.log = append(l.log, string(e))
	}
	return nil
}
func (l *ckptLog) Watermark(context.Context, int, mtime.Time) error { return nil }
func (l *ckptLog) Barrier(_ context.Context, id BarrierID) error {
	l.log = append(l.log, fmt.Sprint("barrier", id))
	return nil
}
func (l *ckptLog) Finish(context.Context) error { l.log = append(l.log, "finish"); return nil }

func (l *ckptLog) SwitchAt(BarrierID) (time.Time, bool) { return l.switchAt, l.canSw }
func (l *ckptLog) Snapshot(node, sub int, id BarrierID) error {
	l.log = append(l.log, fmt.Sprint("snapshot", id))
	return nil
}
func (l *ckptLog) Done(r BarrierRecord) { l.done = append(l.done, r) }
func (l *ckptLog) Finished(int, int)    {}

// gateEvent is one step of a gate test: a message on a channel, or the
// clock moving to at (which may time the alignment out).
type gateEvent struct {
	ch  int
	msg string // "b<N>" a barrier, "end", anything else a data element
	at  time.Duration
}

func runGate(t *testing.T, l *ckptLog, events []gateEvent) {
	t.Helper()
	ctx := context.Background()
	now := gateT0
	g := newGate(l, &Output{}, func(BarrierID) {}, []int{0, 0})
	g.cp, g.node, g.sub, g.now = l, 3, 1, func() time.Time { return now }
	for i, e := range events {
		var err error
		switch {
		case e.at > 0:
			now = gateT0.Add(e.at)
			err = g.alignTimeout(ctx, now)
		case e.msg == "end":
			err = g.handle(ctx, envelope{e.ch, Message{Kind: KindEnd}})
		case strings.HasPrefix(e.msg, "b"):
			var id BarrierID
			fmt.Sscan(e.msg[1:], &id)
			err = g.handle(ctx, envelope{e.ch, Message{Kind: KindBarrier, Barrier: id}})
		default:
			err = g.handle(ctx, envelope{e.ch, Message{Kind: KindData, Elems: [][]byte{[]byte(e.msg)}}})
		}
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		for {
			ok, err := g.deliverQueued(ctx)
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			if !ok {
				break
			}
		}
	}
}

func inFlightOf(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	err := DecodeInFlight(b, func(ch, port int, elems [][]byte) error {
		for _, e := range elems {
			out = append(out, fmt.Sprintf("%d:%s", ch, e))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGateCheckpointModes(t *testing.T) {
	sec := time.Second
	tests := []struct {
		name     string
		switchAt time.Duration // from gateT0; -1: never (aligned)
		events   []gateEvent
		log      []string
		done     []string // "id unaligned alignment inflight..."
	}{
		{"aligned holds back the channel that delivered the barrier", -1,
			[]gateEvent{{0, "a1", 0}, {0, "b1", 0}, {0, "a2", 0}, {1, "x1", 0}, {1, "b1", 0}, {1, "x2", 0}},
			[]string{"a1", "x1", "barrier1", "snapshot1", "a2", "x2"},
			[]string{"1 false 0s []"}},
		{"unaligned forwards at the first barrier and records what it overtook", 0,
			[]gateEvent{{0, "a1", 0}, {0, "b1", 0}, {0, "a2", 0}, {1, "x1", 0}, {1, "x2", 0}, {1, "b1", 0}, {1, "x3", 0}},
			[]string{"a1", "barrier1", "snapshot1", "a2", "x1", "x2", "x3"},
			[]string{"1 true 0s [1:x1 1:x2]"}},
		{"aligned timeout switches when it passes", 5 * sec,
			[]gateEvent{{0, "b1", 0}, {0, "a1", 0}, {1, "x1", 0}, {at: 2 * sec}, {0, "a2", 0}, {at: 5 * sec}, {1, "x2", 0}, {1, "b1", 0}},
			[]string{"x1", "barrier1", "snapshot1", "a1", "a2", "x2"},
			[]string{"1 true 5s [1:x2]"}},
		{"a barrier arriving after the timeout goes unaligned at once", 0,
			[]gateEvent{{at: 7 * sec}, {1, "b1", 0}, {0, "a1", 0}, {0, "b1", 0}},
			[]string{"barrier1", "snapshot1", "a1"},
			[]string{"1 true 0s [0:a1]"}},
		{"a channel that ends completes the alignment", -1,
			[]gateEvent{{0, "b1", 0}, {0, "a1", 0}, {1, "x1", 0}, {1, "end", 0}},
			[]string{"x1", "barrier1", "snapshot1", "a1"},
			[]string{"1 false 0s []"}},
		{"a newer barrier abandons the pending one; stale barriers are ignored", -1,
			[]gateEvent{{0, "b1", 0}, {0, "a1", 0}, {0, "b2", 0}, {1, "x1", 0}, {1, "b2", 0}, {1, "b1", 0}, {1, "x2", 0}},
			// Checkpoint 1 expired upstream before channel 1 brought its
			// barrier: b2 on channel 1 abandons it, releasing channel 0's
			// held a1 and b2, which completes 2; the late b1 is ignored.
			[]string{"x1", "a1", "barrier2", "snapshot2", "x2"},
			[]string{"2 false 0s []"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &ckptLog{}
			if tt.switchAt >= 0 {
				l.switchAt, l.canSw = gateT0.Add(tt.switchAt), true
			}
			runGate(t, l, tt.events)
			if !slices.Equal(l.log, tt.log) {
				t.Errorf("operator heard\n %v\nwant\n %v", l.log, tt.log)
			}
			var done []string
			for _, r := range l.done {
				if r.Node != 3 || r.Subtask != 1 {
					t.Errorf("record names subtask %d/%d, want 3/1", r.Node, r.Subtask)
				}
				done = append(done, fmt.Sprint(r.ID, " ", r.Unaligned, " ", r.Alignment, " ", inFlightOf(t, r.InFlight)))
			}
			if !slices.Equal(done, tt.done) {
				t.Errorf("subtask reported\n %v\nwant\n %v", done, tt.done)
			}
		})
	}
}

func TestDecodeInFlightRejectsGarbage(t *testing.T) {
	var f inFlight
	f.add(1, 0, [][]byte{[]byte("abc"), []byte("de")})
	for _, cut := range []int{1, 4, len(f.buf) - 1} {
		if err := DecodeInFlight(f.buf[:cut], func(int, int, [][]byte) error { return nil }); err == nil {
			t.Errorf("in-flight data cut at %d of %d bytes decoded", cut, len(f.buf))
		}
	}
}

// stateLog is a ckptLog that keeps state of its own outside the store.
type stateLog struct{ ckptLog }

func (s *stateLog) SnapshotState(id BarrierID) ([]byte, error) {
	return []byte(fmt.Sprint("state", id)), nil
}

func TestGateRecordsWatermarksAndOperatorState(t *testing.T) {
	ctx := context.Background()
	l := &stateLog{}
	g := newGate(l, &Output{}, func(BarrierID) {}, []int{0, 0, 1})
	g.cp = l
	for i, env := range []envelope{
		{0, Message{Kind: KindWatermark, Watermark: 5}},
		{1, Message{Kind: KindWatermark, Watermark: 9}},
		{2, Message{Kind: KindWatermark, Watermark: 3}},
		{0, Message{Kind: KindBarrier, Barrier: 1}},
		{1, Message{Kind: KindBarrier, Barrier: 1}},
		{2, Message{Kind: KindBarrier, Barrier: 1}},
	} {
		if err := g.handle(ctx, env); err != nil {
			t.Fatalf("envelope %d: %v", i, err)
		}
	}
	if len(l.done) != 1 {
		t.Fatalf("%d records, want 1", len(l.done))
	}
	r := l.done[0]
	if string(r.State) != "state1" || !slices.Equal(r.Watermarks, []mtime.Time{5, 3}) {
		t.Errorf("record state %q, watermarks %v; want state1 and [5 3]", r.State, r.Watermarks)
	}
}

// laneOp logs what a subtask's operator hears, naming watermarks by port.
type laneOp struct{ ckptLog }

func (l *laneOp) Watermark(_ context.Context, port int, wm mtime.Time) error {
	l.log = append(l.log, fmt.Sprintf("wm%d:%d", port, wm))
	return nil
}

// TestBarrierOvertakesQueuedInput scripts two producers writing into one
// subtask's inbox through real edges (data lane and priority lane) and the
// subtask stepping through it: "0:x" puts data x on channel 0, "0:w7" a
// watermark, "0:b1" barrier 1, "step" lets the subtask do one thing
// (a control message first, then a message it holds, then one of the data
// lane), "prio" only handles what waits on the priority lane, "timeout"
// passes the aligned timeout. Snapshots are marked in the log as
// "barrier1 snapshot1"; the record of each completed checkpoint lists its
// in-flight data. Channel 0 feeds port 0, channel 1 port 1. The data is
// processed in the order it was sent whatever the barriers do: they
// overtake it in the checkpoint, not in processing.
func TestBarrierOvertakesQueuedInput(t *testing.T) {
	queued := []string{"0:d1", "0:d2", "1:e1", "0:d3", "0:w5", "0:d4", "1:e2", "0:d5"}
	script := func(extra ...string) []string {
		s := append(slices.Clone(queued), "0:b1", "0:after", "1:b1", "1:e3")
		return append(s, extra...)
	}
	tests := []struct {
		name     string
		switchAt time.Duration // -1: aligned
		steps    []string
		log      []string // the operator's log after the steps, then "|" and the log once everything is drained
		done     []string
	}{
		{"unaligned: the barrier is snapshotted before any queued batch is processed, and they are in-flight data in order", 0,
			append(script(), "prio"),
			[]string{"barrier1", "snapshot1", "|", "d1", "d2", "e1", "d3", "wm0:5", "d4", "e2", "d5", "after", "e3"},
			[]string{"1 true [0:d1 0:d2 0:d3 0:d4 0:d5 1:e1 1:e2]"}},
		{"aligned: the barrier waits for every batch queued before it", -1,
			append(script(), "prio"),
			[]string{"|", "d1", "d2", "e1", "d3", "wm0:5", "d4", "e2", "d5", "barrier1", "snapshot1", "after", "e3"},
			[]string{"1 false []"}},
		{"aligned timeout: what was processed before the switch is in the snapshot, the rest is in flight", 5 * time.Second,
			// The first step takes channel 1's barrier, the next two d1, d2.
			append(script(), "prio", "step", "step", "step", "timeout"),
			[]string{"d1", "d2", "barrier1", "snapshot1", "|", "e1", "d3", "wm0:5", "d4", "e2", "d5", "after", "e3"},
			[]string{"1 true [0:d3 0:d4 0:d5 1:e1 1:e2]"}},
		{"unaligned: a barrier behind data that arrives after the snapshot takes what it overtook too", 0,
			[]string{"0:d1", "0:b1", "prio", "1:e1", "1:e2", "1:b1", "1:e3", "prio"},
			[]string{"barrier1", "snapshot1", "|", "d1", "e1", "e2", "e3"},
			[]string{"1 true [0:d1 1:e1 1:e2]"}},
		{"unaligned: the next checkpoint's barrier waits behind the pending one and overtakes the rest", 0,
			[]string{"0:d1", "0:b1", "0:d2", "0:b2", "0:d3", "prio", "prio", "1:e1", "1:b1", "1:e2", "1:b2", "prio", "prio"},
			[]string{"barrier1", "snapshot1", "barrier2", "snapshot2", "|", "d1", "d2", "d3", "e1", "e2"},
			[]string{"1 true [0:d1 1:e1]", "2 true [0:d1 0:d2 1:e1 1:e2]"}},
		{"aligned: the next checkpoint's barrier waits behind the pending one, and data behind it waits too", -1,
			[]string{"0:d1", "0:b1", "0:d2", "0:b2", "0:d3", "prio", "prio", "step", "step", "step",
				"1:e1", "1:b1", "1:e2", "1:b2", "prio", "prio"},
			// d2 waits for checkpoint 1, d3 for checkpoint 2.
			[]string{"d1", "|", "e1", "barrier1", "snapshot1", "d2", "e2", "barrier2", "snapshot2", "d3"},
			[]string{"1 false []", "2 false []"}},
		{"a barrier on a channel that skipped the pending one abandons it", 0,
			[]string{"0:d1", "0:b1", "prio", "1:e1", "1:b2", "0:d2", "0:b2", "prio", "prio"},
			// Checkpoint 1 expired upstream of channel 1: barrier 2 there
			// abandons it; its in-flight data is dropped with it.
			[]string{"barrier1", "snapshot1", "barrier2", "snapshot2", "|", "d1", "e1", "d2"},
			[]string{"2 true [1:e1 0:d1 0:d2]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			l := &laneOp{}
			if tt.switchAt >= 0 {
				l.switchAt, l.canSw = gateT0.Add(tt.switchAt), true
			}
			now := gateT0
			in := &inbox{data: newLane(64), prio: make(chan envelope, 8)}
			g := newGate(l, &Output{}, func(BarrierID) {}, []int{0, 1})
			g.cp, g.node, g.sub, g.now, g.scan = l, 3, 1, func() time.Time { return now }, in.scan
			edges := []*edgeOut{
				{lanes: []*lane{in.data}, prio: []chan envelope{in.prio}, chIdx: []int{0}},
				{lanes: []*lane{in.data}, prio: []chan envelope{in.prio}, chIdx: []int{1}},
			}
			step := func() bool {
				ok, err := in.pump(ctx, g)
				if !ok && err == nil {
					ok, err = in.next(ctx, g)
				}
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			for _, s := range tt.steps {
				var err error
				switch s {
				case "step":
					step()
				case "prio":
					select {
					case env := <-in.prio:
						err = g.control(ctx, env)
					default:
						t.Fatal("nothing on the priority lane")
					}
				case "timeout":
					now = gateT0.Add(tt.switchAt)
					err = g.alignTimeout(ctx, now)
				default:
					e, v := edges[s[0]-'0'], s[2:]
					switch {
					case v[0] == 'b':
						var id BarrierID
						fmt.Sscan(v[1:], &id)
						err = e.sendBarrier(ctx, 0, id)
					case v[0] == 'w':
						var wm mtime.Time
						fmt.Sscan(v[1:], &wm)
						err = e.send(ctx, 0, Message{Kind: KindWatermark, Watermark: wm})
					default:
						err = e.send(ctx, 0, Message{Kind: KindData, Elems: [][]byte{[]byte(v)}})
					}
				}
				if err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			l.log = append(l.log, "|")
			for step() {
			}
			if !slices.Equal(l.log, tt.log) {
				t.Errorf("operator heard\n %v\nwant\n %v", l.log, tt.log)
			}
			var done []string
			for _, r := range l.done {
				done = append(done, fmt.Sprint(r.ID, " ", r.Unaligned, " ", inFlightOf(t, r.InFlight)))
			}
			if !slices.Equal(done, tt.done) {
				t.Errorf("subtask reported\n %v\nwant\n %v", done, tt.done)
			}
		})
	}
}
