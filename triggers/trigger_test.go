package triggers

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Proto builders.
func tDefault() *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Default_{Default: &pipepb.Trigger_Default{}}}
}
func tAlways() *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Always_{Always: &pipepb.Trigger_Always{}}}
}
func tNever() *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Never_{Never: &pipepb.Trigger_Never{}}}
}
func tCount(n int32) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: n}}}
}
func tDelay(ms int64) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterProcessingTime_{AfterProcessingTime: &pipepb.Trigger_AfterProcessingTime{
		TimestampTransforms: []*pipepb.TimestampTransform{{TimestampTransform: &pipepb.TimestampTransform_Delay_{Delay: &pipepb.TimestampTransform_Delay{DelayMillis: ms}}}}}}}
}
func tAlign(period, offset int64) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterProcessingTime_{AfterProcessingTime: &pipepb.Trigger_AfterProcessingTime{
		TimestampTransforms: []*pipepb.TimestampTransform{{TimestampTransform: &pipepb.TimestampTransform_AlignTo_{AlignTo: &pipepb.TimestampTransform_AlignTo{Period: period, Offset: offset}}}}}}}
}
func tSync() *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterSynchronizedProcessingTime_{AfterSynchronizedProcessingTime: &pipepb.Trigger_AfterSynchronizedProcessingTime{}}}
}
func tEOW(early, late *pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{EarlyFirings: early, LateFirings: late}}}
}
func tRepeat(s *pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Repeat_{Repeat: &pipepb.Trigger_Repeat{Subtrigger: s}}}
}
func tAll(s ...*pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterAll_{AfterAll: &pipepb.Trigger_AfterAll{Subtriggers: s}}}
}
func tAny(s ...*pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterAny_{AfterAny: &pipepb.Trigger_AfterAny{Subtriggers: s}}}
}
func tEach(s ...*pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEach_{AfterEach: &pipepb.Trigger_AfterEach{Subtriggers: s}}}
}
func tOrFinally(m, f *pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_OrFinally_{OrFinally: &pipepb.Trigger_OrFinally{Main: m, Finally: f}}}
}

// drive runs a script of events against one window whose last instant is
// 99: "e" an element, "wm:N" the watermark moves to N, "pt:N" processing
// time moves to N. After each event the trigger is asked whether to fire,
// as the executor does. The result repeats the script, marking a firing
// "*", the firing that finishes the trigger "*#", and an element that
// arrives once the window is closed "x" (dropped).
func drive(t *testing.T, tr *Trigger, script string) string {
	t.Helper()
	s := tr.NewState()
	c := Context{MaxTimestamp: 99, Watermark: mtime.MinTimestamp}
	return strings.Join(run(t, tr, &s, &c, script), " ")
}

// run plays script against one window's state s, moving the clocks in c.
func run(t *testing.T, tr *Trigger, s *State, c *Context, script string) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Fields(script) {
		op, arg, _ := strings.Cut(ev, ":")
		switch op {
		case "e":
			if s.Finished() {
				out = append(out, ev+"x")
				continue
			}
			tr.OnElement(s, *c)
		case "wm", "pt":
			n, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				t.Fatalf("bad event %q", ev)
			}
			if op == "wm" {
				c.Watermark = mtime.Time(n)
			} else {
				c.Now, c.SyncNow = mtime.Time(n), mtime.Time(n)
			}
		default:
			t.Fatalf("bad event %q", ev)
		}
		out = append(out, ev+fireIfReady(tr, s, *c))
	}
	return out
}

// fireIfReady fires the trigger if it should, as the executor does, and
// marks a firing "*" and the firing that finishes the trigger "*#".
func fireIfReady(tr *Trigger, s *State, c Context) string {
	if !tr.ShouldFire(s, c) {
		return ""
	}
	tr.OnFire(s, c)
	if s.Finished() {
		return "*#"
	}
	return "*"
}

func TestTriggerFirings(t *testing.T) {
	tests := []struct {
		name   string
		tr     *pipepb.Trigger
		script string
		want   string
	}{
		{"default fires at the end of the window and for each late element", tDefault(),
			"e e wm:50 wm:100 e e", "e e wm:50 wm:100* e* e*"},
		{"nil trigger is the default", nil, "e wm:100", "e wm:100*"},
		{"always fires after every element", tAlways(), "e e wm:100 e", "e* e* wm:100 e*"},
		{"never never fires", tNever(), "e e wm:100 pt:1000 e", "e e wm:100 pt:1000 e"},
		{"after count fires once then closes", tCount(2),
			"e e e wm:100 e", "e e*# ex wm:100 ex"},
		{"after count 0 fires at the first element", tCount(0), "e", "e*#"},
		{"processing time delay from the first element", tDelay(10),
			"pt:5 e pt:10 e pt:14 pt:15 e", "pt:5 e pt:10 e pt:14 pt:15*# ex"},
		{"processing time aligned to a period", tAlign(10, 3),
			"pt:5 e pt:12 pt:13 e", "pt:5 e pt:12 pt:13*# ex"},
		{"synchronized processing time fires once time moves on", tSync(),
			"pt:5 e e pt:5 pt:6 e", "pt:5 e e pt:5 pt:6*# ex"},
		{"after watermark alone fires on time and closes", tEOW(tDefault(), nil),
			"e wm:100 e", "e wm:100*# ex"},
		{"after watermark with early firings", tEOW(tCount(2), nil),
			"e e e e e wm:100 e", "e e* e e* e wm:100*# ex"},
		{"after watermark with early and late firings", tEOW(tCount(2), tCount(1)),
			"e e e wm:100 e e", "e e* e wm:100* e* e*"},
		{"after watermark with late firings only", tEOW(nil, tCount(2)),
			"e wm:100 e e e", "e wm:100* e e* e"},
		{"repeatedly after count", tRepeat(tCount(2)), "e e e e e wm:100", "e e* e e* e wm:100"},
		{"repeatedly processing time re-arms", tRepeat(tDelay(10)),
			"pt:0 e pt:10 pt:20 e pt:29 pt:30", "pt:0 e pt:10* pt:20 e pt:29 pt:30*"},
		{"after all waits for every subtrigger", tAll(tCount(2), tDelay(10)),
			"pt:0 e e pt:5 pt:10 e", "pt:0 e e pt:5 pt:10*# ex"},
		{"after any fires at the first ready subtrigger", tAny(tCount(3), tDelay(10)),
			"pt:0 e e pt:10 e", "pt:0 e e pt:10*# ex"},
		{"after each runs subtriggers in order", tEach(tCount(2), tCount(1)),
			"e e e e", "e e* e*# ex"},
		{"or finally fires main until finally fires", tOrFinally(tAlways(), tCount(3)),
			"e e e e", "e* e* e*# ex"},
		{"or finally finishes when main finishes", tOrFinally(tCount(2), tNever()),
			"e e e", "e e*# ex"},
		// Composite triggers nested two deep, as Beam's tests use them.
		{"repeatedly after all of always and count", tRepeat(tAll(tAlways(), tCount(5))),
			"e e e e e e wm:100", "e e e e e* e wm:100"},
		{"repeatedly after each of count and always", tRepeat(tEach(tCount(3), tAlways())),
			"e e e e e", "e e e* e* e*"},
		{"repeatedly after any of count and always", tRepeat(tAny(tCount(3), tAlways())),
			"e e e wm:100 e", "e* e* e* wm:100 e*"},
		{"repeatedly synchronized processing time", tRepeat(tSync()),
			"pt:0 e e e wm:100 pt:1 e pt:2", "pt:0 e e e wm:100 pt:1* e pt:2*"},
		{"after each of repeatedly count and watermark", tEach(tRepeat(tCount(2)), tEOW(nil, nil)),
			"e e e e wm:100", "e e* e e* wm:100"},
		{"or finally of repeatedly count until watermark", tOrFinally(tRepeat(tCount(2)), tEOW(nil, nil)),
			"e e e wm:100 e", "e e* e wm:100*# ex"},
		{"after watermark with early repeatedly after any", tEOW(tAny(tCount(3), tDelay(10)), tAlways()),
			"pt:0 e pt:10 e e e e wm:100 e", "pt:0 e pt:10* e e e* e wm:100* e*"},
		{"after all of after each and count", tAll(tEach(tCount(1), tCount(1)), tCount(3)),
			"e e e e", "e e e*# ex"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := FromProto(tc.tr)
			if err != nil {
				t.Fatal(err)
			}
			if got := drive(t, tr, tc.script); got != tc.want {
				t.Errorf("%v over %q:\n got %q\nwant %q", tr, tc.script, got, tc.want)
			}
		})
	}
}

func TestFromProtoRefuses(t *testing.T) {
	bad := []*pipepb.Trigger{
		tDelay(-5),
		tAlign(0, 0),
		tCount(-1),
		tAll(),
		tRepeat(nil),
		tRepeat(tDelay(-1)),
	}
	for _, p := range bad {
		if _, err := FromProto(p); !errors.Is(err, ErrUnsupported) {
			t.Errorf("FromProto(%v) = %v, want ErrUnsupported", p, err)
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	tr, err := FromProto(tRepeat(tAll(tCount(3), tDelay(10))))
	if err != nil {
		t.Fatal(err)
	}
	s := tr.NewState()
	c := Context{MaxTimestamp: 99, Now: 7}
	tr.OnElement(&s, c)
	tr.OnElement(&s, c)
	b, err := s.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got State
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	tr.OnElement(&got, c)
	if c.Now = 17; !tr.ShouldFire(&got, c) {
		t.Errorf("decoded state lost its count or deadline: %+v", got)
	}
	if err := got.UnmarshalBinary(b[:len(b)-1]); err == nil {
		t.Error("truncated state decoded without error")
	}
}

func TestPaneTracker(t *testing.T) {
	var p PaneTracker
	const maxTS = 99
	steps := []struct {
		in, out mtime.Time
		final   bool
		want    Pane
		bytes   string
	}{
		{50, 40, false, Pane{First: true, Timing: Early, Index: 0, OnTimeIndex: -1}, "1100"},
		{60, 50, false, Pane{Timing: Early, Index: 1, OnTimeIndex: -1}, "1001"},
		{100, 60, false, Pane{Timing: OnTime, Index: 2, OnTimeIndex: 0}, "240200"},
		{100, 100, false, Pane{Timing: Late, Index: 3, OnTimeIndex: 1}, "280301"},
		{200, 100, true, Pane{Last: true, Timing: Late, Index: 4, OnTimeIndex: 2}, "2a0402"},
	}
	for i, st := range steps {
		got := p.Next(maxTS, st.in, st.out, st.final)
		if got != st.want {
			t.Errorf("pane %d = %+v, want %+v", i, got, st.want)
		}
		if b := fmtHex(AppendPane(nil, got)); b != st.bytes {
			t.Errorf("pane %d encodes as %s, want %s", i, b, st.bytes)
		}
	}
	var q PaneTracker
	if got := q.Next(maxTS, 100, 50, true); got != (Pane{First: true, Last: true, Timing: OnTime}) || fmtHex(AppendPane(nil, got)) != "07" {
		t.Errorf("single on-time pane = %+v", got)
	}
}

func fmtHex(b []byte) string {
	const digits = "0123456789abcdef"
	var s []byte
	for _, c := range b {
		s = append(s, digits[c>>4], digits[c&15])
	}
	return string(s)
}
