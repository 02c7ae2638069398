package executor

import (
	"context"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/wire"
)

func TestSideWindowsReadyAfter(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    SideWindows
		main mtime.Time
		want mtime.Time
	}{
		{"global", SideWindows{}, 5, mtime.EndOfGlobalWindowTime},
		{"global main window into fixed side", SideWindows{Size: 10}, mtime.EndOfGlobalWindowTime, mtime.EndOfGlobalWindowTime},
		{"fixed, first instant", SideWindows{Size: 10}, 0, 9},
		{"fixed, last instant", SideWindows{Size: 10}, 9, 9},
		{"fixed, next window", SideWindows{Size: 10}, 10, 19},
		{"fixed, negative time", SideWindows{Size: 10}, -1, -1},
		{"fixed, negative window", SideWindows{Size: 10}, -11, -11},
		{"fixed with offset", SideWindows{Size: 10, Offset: 3}, 12, 12},
		{"fixed with offset, next", SideWindows{Size: 10, Offset: 3}, 13, 22},
		// Windows [0,10) [5,15): 7 is in both; the later ends at 14.
		{"sliding, latest ending", SideWindows{Size: 10, Period: 5}, 7, 14},
		{"sliding, on a period boundary", SideWindows{Size: 10, Period: 5}, 5, 14},
		{"sliding, before a boundary", SideWindows{Size: 10, Period: 5}, 4, 9},
		// A main window of [0,10) has last instant 9: side [0,10) or [5,15).
		{"sliding, main window end", SideWindows{Size: 10, Period: 5}, 9, 14},
	} {
		if got := tc.w.ReadyAfter(tc.main); got != tc.want {
			t.Errorf("%s: ReadyAfter(%d) = %d, want %d", tc.name, tc.main, got, tc.want)
		}
	}
}

// Main-input elements wait for the side window their window maps to, and
// only for that one: a side watermark past the first window releases its
// elements and keeps the next window's waiting, holding the watermark.
func TestSideInputWaitsPerWindow(t *testing.T) {
	main := wire.NewCodec(ivMeasure, func(b []byte) (int, error) { return len(b), nil })
	spec := &SDKStageSpec{Name: "stage", MainCodec: main, MaxElems: 1 << 20,
		SideInputs: []SideInputSpec{{TransformID: "t", LocalName: "side", Windows: SideWindows{Size: 10}}}}
	s := NewSDKStage(spec, nil)
	elem := func(ts, start, end mtime.Time) []byte {
		return wire.AppendWindowedValue(nil, ts, wire.AppendIntervalWindow(nil, start, end), []byte{wire.PaneNoFiring}, []byte{byte(ts)})
	}
	if err := s.Process(context.Background(), 0, [][]byte{elem(3, 0, 10), elem(12, 10, 20), elem(5, 0, 10)}); err != nil {
		t.Fatal(err)
	}
	if len(s.pending) != 0 || len(s.waiting) != 3 || s.waitHold != 3 {
		t.Fatalf("before the side input: pending %d waiting %d hold %d, want 0, 3, 3", len(s.pending), len(s.waiting), s.waitHold)
	}
	for _, step := range []struct {
		sideWM           mtime.Time
		pending, waiting int
		hold             mtime.Time
	}{
		{9, 0, 3, 3},   // [0,10) is complete only once the watermark passes 9
		{10, 2, 1, 12}, // released in arrival order; [10,20) still waits
		{mtime.MaxTimestamp, 3, 0, mtime.MaxTimestamp},
	} {
		s.sides[0].wm = step.sideWM
		if err := s.release(); err != nil {
			t.Fatal(err)
		}
		if len(s.pending) != step.pending || len(s.waiting) != step.waiting || s.waitHold != step.hold {
			t.Errorf("side watermark %d: pending %d waiting %d hold %d, want %d, %d, %d", step.sideWM,
				len(s.pending), len(s.waiting), s.waitHold, step.pending, step.waiting, step.hold)
		}
	}
	if s.pending[0][7] != 3 || s.pending[1][7] != 5 {
		t.Errorf("released out of arrival order: timestamps %d, %d", s.pending[0][7], s.pending[1][7])
	}
}
