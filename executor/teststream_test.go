package executor

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/wire"
)

// recordSource runs a source into one channel and returns what went down
// it, one message per line, after first queueing the given barriers at its
// injector. Elements hold a one-byte value; times after start print
// relative to it.
func recordSource(t *testing.T, src Source, start mtime.Time, barriers ...BarrierID) []string {
	t.Helper()
	ctx := context.Background()
	ch := make(chan envelope, 1024)
	out := &Output{ports: [][]*edgeOut{{{to: []chan envelope{ch}, chIdx: []int{0}, name: "test"}}}}
	in := make(chan BarrierID, len(barriers))
	for _, id := range barriers {
		in <- id
	}
	var acked []BarrierID
	inj := &Injector{ctx: ctx, in: in, out: out, ack: func(id BarrierID) { acked = append(acked, id) }}
	if err := src.Run(ctx, out, inj); err != nil {
		t.Fatal(err)
	}
	if len(acked) != len(barriers) {
		t.Errorf("acknowledged barriers %v, want %v", acked, barriers)
	}
	close(ch)
	codec := wire.NewCodec(func([]byte) (int, error) { return 0, nil }, func([]byte) (int, error) { return 1, nil })
	timeString := func(tm mtime.Time) string {
		switch tm {
		case mtime.MaxTimestamp:
			return "max"
		case start:
			return "start"
		}
		if tm > start {
			return fmt.Sprintf("start+%d", tm-start)
		}
		return fmt.Sprint(int64(tm))
	}
	var got []string
	for env := range ch {
		m := env.msg
		switch m.Kind {
		case KindData:
			s := "data"
			for _, e := range m.Elems {
				wv, n, err := codec.Decode(e, nil)
				if err != nil || n != len(e) || len(wv.Windows) != 1 || len(wv.Windows[0]) != 0 {
					t.Fatalf("element %x: not one value in the global window (%v)", e, err)
				}
				if len(wv.Pane) != 1 || wv.Pane[0] != wire.PaneNoFiring {
					t.Errorf("element %x: pane %x, want no firing", e, wv.Pane)
				}
				s += fmt.Sprintf(" %d@%d", wv.Value[0], wv.Timestamp)
			}
			got = append(got, s)
		case KindWatermark:
			got = append(got, "wm "+timeString(m.Watermark))
		case KindProcessingTime:
			got = append(got, "pt "+timeString(m.Watermark))
		case KindBarrier:
			got = append(got, fmt.Sprint("barrier ", m.Barrier))
		default:
			t.Fatalf("unexpected message kind %d", m.Kind)
		}
	}
	return got
}

func elems(ts mtime.Time, vals ...byte) TestStreamEvent {
	ev := TestStreamEvent{Kind: TestStreamElements}
	for _, v := range vals {
		ev.Elements = append(ev.Elements, TestStreamElement{Timestamp: ts, Value: []byte{v}})
	}
	return ev
}

func wmark(t mtime.Time) TestStreamEvent {
	return TestStreamEvent{Kind: TestStreamWatermark, Watermark: t}
}

func advance(ms int64) TestStreamEvent {
	return TestStreamEvent{Kind: TestStreamProcessingTime, AdvanceMillis: ms}
}

var toInfinity = TestStreamEvent{Kind: TestStreamProcessingTime, ToInfinity: true}

func TestTestStreamReplay(t *testing.T) {
	const start = mtime.Time(1_000_000)
	tests := []struct {
		name     string
		events   []TestStreamEvent
		start    mtime.Time
		batch    int
		barriers []BarrierID
		want     string
	}{
		{name: "no events", want: "pt start | wm max"},
		{name: "in order",
			events: []TestStreamEvent{elems(100, 1, 2), wmark(110), elems(120, 3), elems(90, 4), wmark(130)},
			want:   "pt start | data 1@100 2@100 | wm 110 | data 3@120 | data 4@90 | wm 130 | wm max"},
		{name: "watermark never goes back",
			events: []TestStreamEvent{wmark(200), wmark(150), wmark(200), elems(5, 1), wmark(mtime.MaxTimestamp), wmark(300)},
			want:   "pt start | wm 200 | data 1@5 | wm max"},
		{name: "processing time",
			events: []TestStreamEvent{advance(10_000), elems(1, 1), advance(0), advance(5), toInfinity, advance(7), wmark(mtime.MaxTimestamp)},
			want:   "pt start | pt start+10000 | data 1@1 | pt start+10005 | pt max | wm max"},
		{name: "Go's AdvanceProcessingTimeToInfinity after the watermark",
			events: []TestStreamEvent{elems(123456, 42), wmark(mtime.MaxTimestamp), advance(10_000), advance(int64(mtime.MaxTimestamp))},
			want:   "pt start | data 42@123456 | wm max | pt start+10000 | pt max"},
		{name: "processing time saturates",
			start:  mtime.MaxTimestamp - 10,
			events: []TestStreamEvent{advance(4), advance(1 << 62), advance(1)},
			want:   "pt start | pt start+4 | pt max | wm max"},
		{name: "batches are bounded",
			batch:  2,
			events: []TestStreamEvent{elems(7, 1, 2, 3, 4, 5)},
			want:   "pt start | data 1@7 2@7 | data 3@7 4@7 | data 5@7 | wm max"},
		{name: "barriers go out before the first event",
			barriers: []BarrierID{1, 2},
			events:   []TestStreamEvent{elems(7, 1)},
			want:     "barrier 1 | barrier 2 | pt start | data 1@7 | wm max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.start
			if st == 0 {
				st = start
			}
			got := recordSource(t, &TestStream{Events: tt.events, Start: st, Batch: tt.batch}, st, tt.barriers...)
			if s := strings.Join(got, " | "); s != tt.want {
				t.Errorf("replay:\n got %s\nwant %s", s, tt.want)
			}
		})
	}
}

// procTimeCheck records what an operator downstream of a TestStream hears.
type procTimeCheck struct {
	log []string
	wm  mtime.Time
	pt  mtime.Time
	out *Output
}

func (c *procTimeCheck) Process(_ context.Context, _ int, elems [][]byte) error {
	c.log = append(c.log, fmt.Sprintf("data %d", len(elems)))
	return nil
}

func (c *procTimeCheck) Watermark(_ context.Context, _ int, wm mtime.Time) error {
	if wm <= c.wm {
		return fmt.Errorf("watermark went from %v to %v", c.wm, wm)
	}
	c.wm = wm
	c.log = append(c.log, fmt.Sprintf("wm %d", wm))
	return nil
}

func (c *procTimeCheck) ProcessingTime(ctx context.Context, pt mtime.Time) error {
	if pt <= c.pt {
		return fmt.Errorf("processing time went from %v to %v", c.pt, pt)
	}
	c.pt = pt
	c.log = append(c.log, fmt.Sprintf("pt %d", pt))
	return c.out.ProcessingTime(ctx, pt)
}

func (c *procTimeCheck) Barrier(context.Context, BarrierID) error { return nil }
func (c *procTimeCheck) Finish(context.Context) error             { c.log = append(c.log, "end"); return nil }

// TestTestStreamDrivesOperators runs a TestStream in a graph: the operator
// downstream hears elements, watermarks and processing time in the order of
// the events.
func TestTestStreamDrivesOperators(t *testing.T) {
	check := &procTimeCheck{wm: mtime.MinTimestamp, pt: mtime.MinTimestamp}
	g := &Graph{Nodes: []*Node{
		{Name: "ts", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) {
			return &TestStream{Start: 50, Events: []TestStreamEvent{
				elems(10, 1, 2), advance(5), wmark(20), elems(30, 3), toInfinity}}, nil
		}},
		{Name: "check", Parallelism: 1, Outputs: 1, Inputs: []NodeInput{{Port: 0, From: 0}},
			New: func(_ int, out *Output) (Operator, error) { check.out = out; return check, nil }},
	}}
	if err := g.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("pt 50 | data 2 | pt 55 | wm 20 | data 1 | pt %d | wm %d | end", mtime.MaxTimestamp, mtime.MaxTimestamp)
	if got := strings.Join(check.log, " | "); got != want {
		t.Errorf("operator heard:\n got %s\nwant %s", got, want)
	}
}
