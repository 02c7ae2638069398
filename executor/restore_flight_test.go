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

// ptLaneOp is a laneOp that acts on processing time too.
type ptLaneOp struct{ laneOp }

func (l *ptLaneOp) ProcessingTime(_ context.Context, t mtime.Time) error {
	l.log = append(l.log, fmt.Sprint("pt:", t))
	return nil
}

// TestRestoreWatermarksInFlight checkpoints a subtask of two channels on
// one port whose unaligned barrier overtakes data, watermarks and
// processing-time advances, and restores a new subtask from the record.
// The restored one must hear the watermark it had processed, then the
// in-flight data, then the watermark and processing time that were in
// flight with it (nothing else sends them again: a restored Kafka read
// emits its watermark only once it passes the recorded one). Its channels
// start where each was, not at the port's minimum: once the producer that
// was behind catches up, the port moves to the other one's watermark.
func TestRestoreWatermarksInFlight(t *testing.T) {
	ctx := context.Background()
	l := &ptLaneOp{}
	l.canSw = true // unaligned from the start
	in := &inbox{data: newLane(64), prio: make(chan envelope, 8)}
	g := newGate(l, &Output{}, func(BarrierID) {}, []int{0, 0})
	g.cp, g.node, g.sub, g.now, g.scan = l, 3, 1, func() time.Time { return gateT0 }, in.scan
	edges := []*edgeOut{
		{lanes: []*lane{in.data}, prio: []chan envelope{in.prio}, chIdx: []int{0}},
		{lanes: []*lane{in.data}, prio: []chan envelope{in.prio}, chIdx: []int{1}},
	}
	send := func(ch int, m Message) {
		t.Helper()
		if err := edges[ch].send(ctx, 0, m); err != nil {
			t.Fatal(err)
		}
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
	wm := func(t mtime.Time) Message { return Message{Kind: KindWatermark, Watermark: t} }
	data := func(v string) Message { return Message{Kind: KindData, Elems: [][]byte{[]byte(v)}} }
	send(0, wm(5))
	send(1, wm(70))
	for step() {
	}
	send(0, data("d1"))
	send(0, wm(20))
	send(0, Message{Kind: KindProcessingTime, Watermark: 9})
	send(1, Message{Kind: KindProcessingTime, Watermark: 11})
	send(1, data("e1"))
	for ch := range 2 {
		if err := edges[ch].sendBarrier(ctx, 0, 1); err != nil {
			t.Fatal(err)
		}
	}
	for step() {
	}
	if len(l.done) != 1 || !l.done[0].Unaligned {
		t.Fatalf("records %+v, want one of an unaligned barrier", l.done)
	}
	r := l.done[0]
	ninf := mtime.MinTimestamp
	want := []ChannelMark{
		{Watermark: 5, ProcessingTime: ninf, InFlightWatermark: 20, InFlightProcessingTime: 9},
		{Watermark: 70, ProcessingTime: ninf, InFlightWatermark: ninf, InFlightProcessingTime: 11}}
	if !slices.Equal(r.Channels, want) {
		t.Errorf("recorded channels %v, want %v", r.Channels, want)
	}

	again := &ptLaneOp{}
	h := newGate(again, &Output{}, func(BarrierID) {}, []int{0, 0})
	rs := &SubtaskRestore{Watermarks: r.Watermarks, Channels: r.Channels, InFlight: r.InFlight}
	if err := h.restore(ctx, rs); err != nil {
		t.Fatal(err)
	}
	// The producer behind catches up: the port follows the other channel.
	if err := h.handle(ctx, envelope{0, wm(200)}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(again.log, " ")
	if want := "wm0:5 d1 e1 wm0:20 pt:9 wm0:70"; got != want {
		t.Errorf("the restored operator heard %q, want %q", got, want)
	}
}
