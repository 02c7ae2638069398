package jobview

import (
	"math"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestRates(t *testing.T) {
	prev := Counts{ElementsIn: 100, ElementsOut: 50, BytesIn: 1000, BytesOut: 500}
	cur := Counts{ElementsIn: 300, ElementsOut: 50, BytesIn: 3000, BytesOut: 400}
	for _, tc := range []struct {
		name string
		d    time.Duration
		want Rates
	}{
		{"two seconds", 2 * time.Second, Rates{100, 0, 1000, 0}}, // a count that went back (a restart) has no rate
		{"no interval", 0, Rates{}},
		{"negative interval", -time.Second, Rates{}},
	} {
		if got := cur.Rates(prev, tc.d); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestRatios(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prev, cur  Counts
		busy, idle float64
		bp         float64
	}{
		{"all busy", Counts{}, Counts{BusySeconds: 1}, 1, 0, 0},
		{"a quarter each way", Counts{BusySeconds: 1, IdleSeconds: 1},
			Counts{BusySeconds: 1.5, IdleSeconds: 1.25, BackpressuredSeconds: 0.25}, 0.5, 0.25, 0.25},
		{"did not run", Counts{BusySeconds: 2}, Counts{BusySeconds: 2}, 0, 0, 0},
	} {
		got := tc.cur.Ratios(tc.prev)
		if !near(got.Busy, tc.busy) || !near(got.Idle, tc.idle) || !near(got.Backpressured, tc.bp) {
			t.Errorf("%s: got %+v, want busy %v idle %v backpressured %v", tc.name, got, tc.busy, tc.idle, tc.bp)
		}
	}
}

func TestLag(t *testing.T) {
	now := time.UnixMilli(10_000)
	for _, tc := range []struct {
		wm   int64
		want float64
	}{{7_500, 2.5}, {10_000, 0}, {12_000, 0}, {MinWatermark, 0}, {MaxWatermark, 0}, {MinWatermark - 1, 0}} {
		if got := Lag(now, tc.wm); !near(got, tc.want) {
			t.Errorf("Lag(%d) = %v, want %v", tc.wm, got, tc.want)
		}
	}
}

func TestRollup(t *testing.T) {
	now := time.UnixMilli(10_000)
	s := Stage{Subtasks: []Subtask{
		{Counts: Counts{ElementsIn: 1, BytesOut: 2}, Rates: Rates{ElementsInPerSecond: 1}, Ratios: Ratios{Busy: 0.2, Backpressured: 0.7},
			InputWatermark: 5_000, OutputWatermark: 4_000},
		{Counts: Counts{ElementsIn: 3, BytesOut: 4}, Rates: Rates{ElementsInPerSecond: 2}, Ratios: Ratios{Busy: 0.9, Idle: 0.1},
			InputWatermark: 6_000, OutputWatermark: 6_000},
	}}
	s.Rollup(now)
	if s.ElementsIn != 4 || s.BytesOut != 6 || s.ElementsInPerSecond != 3 {
		t.Errorf("counts and rates: %+v %+v", s.Counts, s.Rates)
	}
	if s.Busy != 0.9 || s.Backpressured != 0.7 || s.Idle != 0.1 {
		t.Errorf("ratios %+v, want the greatest of each", s.Ratios)
	}
	if s.InputWatermark != 5_000 || s.OutputWatermark != 4_000 || !near(s.WatermarkLag, 6) {
		t.Errorf("watermarks %d %d lag %v", s.InputWatermark, s.OutputWatermark, s.WatermarkLag)
	}
	var empty Stage
	empty.Rollup(now)
	if empty.OutputWatermark != MinWatermark || empty.WatermarkLag != 0 {
		t.Errorf("a stage without subtasks: %+v", empty)
	}
}
