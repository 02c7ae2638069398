package triggers

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// driveMerge plays script a against session A (last instant 99), then b
// against session B (last instant 149), on shared clocks, then merges them
// into one window (last instant 149) and plays after against it. The merge
// shows as "m", then "*" if the merged window fires at once and "#" if its
// trigger is finished.
func driveMerge(t *testing.T, tr *Trigger, a, b, after string) string {
	t.Helper()
	c := Context{Watermark: mtime.MinTimestamp, Merging: true}
	sa, sb := tr.NewState(), tr.NewState()
	c.MaxTimestamp = 99
	ra := run(t, tr, &sa, &c, a)
	c.MaxTimestamp = 149
	rb := run(t, tr, &sb, &c, b)
	m := tr.OnMerge([]*State{&sa, &sb}, c)
	ev := "m" + fireIfReady(tr, &m, c)
	if m.Finished() && !strings.HasSuffix(ev, "#") {
		ev += "#"
	}
	rm := append([]string{ev}, run(t, tr, &m, &c, after)...)
	return strings.Join(ra, " ") + " | " + strings.Join(rb, " ") + " | " + strings.Join(rm, " ")
}

func TestOnMerge(t *testing.T) {
	tests := []struct {
		name  string
		tr    *pipepb.Trigger
		a, b  string
		after string
		want  string
	}{
		{"default fires at the merged window's end", tDefault(),
			"e wm:100", "e", "wm:150 e",
			"e wm:100* | e | m wm:150* e*"},
		{"after count adds the counts", tCount(3),
			"e e", "e", "e",
			"e e | e | m*# ex"},
		{"after count finished in one window stays finished", tCount(2),
			"e e", "e", "e",
			"e e*# | e | m# ex"},
		{"repeatedly after count fires on the summed count", tRepeat(tCount(3)),
			"e e", "e", "e e e",
			"e e | e | m* e e e*"},
		{"always sums and fires", tAlways(),
			"e", "", "e",
			"e* |  | m e*"},
		{"processing time takes the earliest deadline", tDelay(10),
			"pt:0 e", "pt:5 e", "pt:9 pt:10",
			"pt:0 e | pt:5 e | m pt:9 pt:10*#"},
		{"processing time finished in one window stays finished", tDelay(10),
			"pt:0 e pt:10", "e", "e",
			"pt:0 e pt:10*# | e | m# ex"},
		{"after watermark reopens when the merged window ends later", tEOW(nil, nil),
			"e wm:100", "e", "wm:150 e",
			"e wm:100*# | e | m wm:150*# ex"},
		{"after watermark unfinished in one window past the end fires at once", tEOW(nil, nil),
			"e", "e wm:150", "e",
			"e | e wm:150*# | m*# ex"},
		{"after watermark finished everywhere and past the end stays finished", tEOW(nil, nil),
			"e wm:100", "e wm:150", "e",
			"e wm:100*# | e wm:150*# | m# ex"},
		{"early firings merge their counts", tEOW(tRepeat(tCount(2)), tCount(1)),
			"e", "e", "e wm:150 e",
			"e | e | m* e wm:150* e*"},
		{"late phase when every window is late", tEOW(tCount(2), tCount(2)),
			"e wm:150", "e", "e e",
			"e wm:150* | e* | m e e*"},
		{"early phase again when one window is not late", tEOW(tCount(5), tCount(1)),
			"e wm:100", "e", "e wm:150",
			"e wm:100* | e | m e wm:150*"},
		{"repeatedly after all of count and delay", tRepeat(tAll(tCount(2), tDelay(10))),
			"pt:0 e", "e", "pt:10 e",
			"pt:0 e | e | m pt:10* e"},
		{"after each merges in order and clears after the first unfinished", tEach(tCount(2), tCount(3)),
			"e e e", "e", "e e",
			"e e* e | e | m e*# ex"},
		{"or finally finishes when until reaches its count", tOrFinally(tRepeat(tCount(2)), tCount(3)),
			"e e", "e", "e",
			"e e* | e | m*# ex"},
		{"after any reopens when its finished subtrigger reopens", tAny(tCount(3), tEOW(nil, nil)),
			"e wm:100", "e", "e e",
			"e wm:100*# | e | m e*# ex"},
		{"after any stays finished when a subtrigger stays finished", tAny(tCount(2), tNever()),
			"e e", "e", "e",
			"e e*# | e | m# ex"},
		{"after all waits for every merged subtrigger", tAll(tCount(2), tEOW(nil, nil)),
			"e", "e", "wm:150",
			"e | e | m wm:150*#"},
		{"early repeatedly after any of count and delay", tEOW(tRepeat(tAny(tCount(3), tDelay(10))), tAlways()),
			"pt:0 e", "pt:4 e", "pt:10 e e e wm:150 e",
			"pt:0 e | pt:4 e | m pt:10* e e e* wm:150* e*"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := FromProto(tc.tr)
			if err != nil {
				t.Fatal(err)
			}
			if got := driveMerge(t, tr, tc.a, tc.b, tc.after); got != tc.want {
				t.Errorf("%v:\n got %q\nwant %q", tr, got, tc.want)
			}
		})
	}
}

func TestOnMergeLeavesInputs(t *testing.T) {
	tr, err := FromProto(tRepeat(tCount(3)))
	if err != nil {
		t.Fatal(err)
	}
	a, b := tr.NewState(), tr.NewState()
	tr.OnElement(&a, Context{})
	tr.OnElement(&b, Context{})
	m := tr.OnMerge([]*State{&a, &b}, Context{})
	tr.OnElement(&m, Context{})
	if !tr.ShouldFire(&m, Context{}) || tr.ShouldFire(&a, Context{}) {
		t.Errorf("merged state shares nodes with its inputs")
	}
	if s := tr.OnMerge(nil, Context{}); tr.Check(&s) != nil {
		t.Errorf("merging nothing gives a state of another shape")
	}
}

func TestMergePanes(t *testing.T) {
	var a, b, none PaneTracker
	a.Next(99, 50, 40, false)
	b.Next(149, 50, 40, false)
	b.Next(149, 60, 50, false)
	m := MergePanes([]PaneTracker{a, none, b})
	if got := m.Next(149, 70, 60, false); got.Index != 2 || got.First {
		t.Errorf("pane after merge = %+v, want index 2, not first", got)
	}
	if m := MergePanes([]PaneTracker{none, none}); m.Next(149, 70, 60, false).Index != 0 {
		t.Error("merging unfired windows does not start at pane 0")
	}
	enc, _ := b.AppendBinary(nil)
	var back PaneTracker
	if err := back.UnmarshalBinary(enc); err != nil || back != b {
		t.Errorf("round trip %+v, %v; want %+v", back, err, b)
	}
	enc, _ = none.AppendBinary(nil)
	if err := back.UnmarshalBinary(enc); err != nil || back != none {
		t.Errorf("round trip of an unfired tracker %+v, %v", back, err)
	}
	for _, bad := range [][]byte{nil, {2}, {0, 1}, {1}} {
		if err := back.UnmarshalBinary(bad); err == nil {
			t.Errorf("UnmarshalBinary(%x): no error", bad)
		}
	}
}
