package executor

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// sourceRecorder captures what sources put in their snapshots.
type sourceRecorder struct{ states []string }

func (r *sourceRecorder) SwitchAt(BarrierID) (time.Time, bool) { return time.Time{}, false }
func (r *sourceRecorder) Snapshot(int, int, BarrierID) error   { return nil }
func (r *sourceRecorder) Done(rec BarrierRecord)               { r.states = append(r.states, string(rec.State)) }
func (r *sourceRecorder) Finished(int, int)                    {}

func runSource(t *testing.T, src Source, barriers ...BarrierID) []string {
	t.Helper()
	ctx := context.Background()
	out := &Output{ports: [][]*edgeOut{{{to: []chan envelope{make(chan envelope, 1024)}, chIdx: []int{0}, name: "test"}}}}
	in := make(chan BarrierID, len(barriers))
	for _, id := range barriers {
		in <- id
	}
	rec := &sourceRecorder{}
	inj := &Injector{ctx: ctx, in: in, out: out, ack: func(BarrierID) {}, cp: rec}
	if err := src.Run(ctx, out, inj); err != nil {
		t.Fatal(err)
	}
	return rec.states
}

func TestImpulseSnapshotsWhetherItFired(t *testing.T) {
	if got := runSource(t, Impulse{}, 1); len(got) != 1 || got[0] != `{"fired":false}` {
		t.Errorf("a barrier before the impulse snapshots %v", got)
	}
}

// TestTestStreamPosition replays events and reads the position a snapshot
// would take after each: the next event to send, and the watermark and
// processing time sent.
func TestTestStreamPosition(t *testing.T) {
	ctx := context.Background()
	out := &Output{ports: [][]*edgeOut{{{to: []chan envelope{make(chan envelope, 1024)}, chIdx: []int{0}, name: "test"}}}}
	inj := &Injector{ctx: ctx, in: make(chan BarrierID), out: out, ack: func(BarrierID) {}}
	events := []TestStreamEvent{
		{Kind: TestStreamElements, Elements: []TestStreamElement{{1, []byte("a")}, {2, []byte("b")}, {3, []byte("c")}}},
		{Kind: TestStreamWatermark, Watermark: 10},
		{Kind: TestStreamWatermark, Watermark: 5}, // behind: sends nothing
		{Kind: TestStreamProcessingTime, AdvanceMillis: 7},
	}
	r := &replay{out: out, inj: inj, wm: mtime.MinTimestamp, pt: 100, events: len(events)}
	want := []TestStreamPosition{
		{Next: 1, Watermark: mtime.MinTimestamp, ProcessingTime: 100},
		{Next: 2, Watermark: 10, ProcessingTime: 100},
		{Next: 3, Watermark: 10, ProcessingTime: 100},
		{Next: 4, Watermark: 10, ProcessingTime: 107},
	}
	for i, ev := range events {
		r.cur = i
		if err := r.event(ctx, ev, 2); err != nil {
			t.Fatal(err)
		}
		if i == 0 && (r.next != 1 || r.sent != 0) {
			t.Errorf("after all elements of event 0: next %d, sent %d", r.next, r.sent)
		}
		r.next, r.sent = i+1, 0 // as Run does after each event
		b, err := r.position()
		if err != nil {
			t.Fatal(err)
		}
		var got TestStreamPosition
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got != want[i] {
			t.Errorf("after event %d: position %+v, want %+v", i, got, want[i])
		}
	}
	// Part of an event: two of three elements sent.
	r = &replay{out: out, inj: inj, events: 1}
	r.sent = 2
	if b, _ := r.position(); string(b) != `{"next_event":0,"sent":2,"watermark":0,"processing_time":0}` {
		t.Errorf("mid-event position %s", b)
	}
}

func TestTestStreamSnapshotsItsPosition(t *testing.T) {
	src := &TestStream{Start: 100, Events: []TestStreamEvent{{Kind: TestStreamWatermark, Watermark: 10}}}
	got := runSource(t, src, 1)
	if len(got) != 1 {
		t.Fatalf("snapshots %v, want one", got)
	}
	var pos TestStreamPosition
	if err := json.Unmarshal([]byte(got[0]), &pos); err != nil || pos.Next != 0 || pos.ProcessingTime != 100 {
		t.Errorf("a barrier before any event snapshots %s (%v)", got[0], err)
	}
}
