package jobview

import (
	"time"
)

// Rates returns the rates of c over the interval d since prev was read.
// A zero or negative interval has no rates.
func (c Counts) Rates(prev Counts, d time.Duration) Rates {
	if d <= 0 {
		return Rates{}
	}
	s := d.Seconds()
	per := func(cur, old int64) float64 { return float64(max(cur-old, 0)) / s }
	return Rates{
		ElementsInPerSecond:  per(c.ElementsIn, prev.ElementsIn),
		ElementsOutPerSecond: per(c.ElementsOut, prev.ElementsOut),
		BytesInPerSecond:     per(c.BytesIn, prev.BytesIn),
		BytesOutPerSecond:    per(c.BytesOut, prev.BytesOut),
	}
}

// Ratios returns the shares of busy, idle and backpressured time between
// prev and c. They are shares of the time the three add up to, which is
// the subtask's running time over the interval: a subtask that ended
// during it is judged by the part it ran, and one that did not run at all
// has no ratios.
func (c Counts) Ratios(prev Counts) Ratios {
	busy := max(c.BusySeconds-prev.BusySeconds, 0)
	idle := max(c.IdleSeconds-prev.IdleSeconds, 0)
	bp := max(c.BackpressuredSeconds-prev.BackpressuredSeconds, 0)
	total := busy + idle + bp
	if total <= 0 {
		return Ratios{}
	}
	return Ratios{Busy: busy / total, Idle: idle / total, Backpressured: bp / total}
}

// Lag returns now minus watermark wm in seconds: how far event time is
// behind the wall clock. A watermark at the start or the end of time has
// no lag; one ahead of the clock has none either.
func Lag(now time.Time, wm int64) float64 {
	if wm <= MinWatermark || wm >= MaxWatermark {
		return 0
	}
	lag := float64(now.UnixMilli()-wm) / 1000
	return max(lag, 0)
}

// Rollup sets the stage's figures from its subtasks: counts and rates add,
// watermarks are the least (the stage is as far as its slowest subtask),
// ratios the greatest (its most loaded subtask colours it).
func (s *Stage) Rollup(now time.Time) {
	var c Counts
	var r Rates
	var q Ratios
	in, out := MaxWatermark, MaxWatermark
	// An idle subtask holds its consumers back no more than an ended one:
	// the stage is as far as its slowest subtask that is not idle, or,
	// every one idle, as its slowest.
	active := 0
	for _, st := range s.Subtasks {
		if !st.WatermarkIdle {
			active++
		}
	}
	for _, st := range s.Subtasks {
		c.add(st.Counts)
		r.ElementsInPerSecond += st.ElementsInPerSecond
		r.ElementsOutPerSecond += st.ElementsOutPerSecond
		r.BytesInPerSecond += st.BytesInPerSecond
		r.BytesOutPerSecond += st.BytesOutPerSecond
		q.Busy = max(q.Busy, st.Busy)
		q.Idle = max(q.Idle, st.Idle)
		q.Backpressured = max(q.Backpressured, st.Backpressured)
		if !st.WatermarkIdle || active == 0 {
			in, out = min(in, st.InputWatermark), min(out, st.OutputWatermark)
		}
	}
	if len(s.Subtasks) == 0 {
		in, out = MinWatermark, MinWatermark
	}
	s.Counts, s.Rates, s.Ratios = c, r, q
	s.InputWatermark, s.OutputWatermark = in, out
	s.WatermarkLag = Lag(now, out)
}

func (c *Counts) add(o Counts) {
	c.ElementsIn += o.ElementsIn
	c.ElementsOut += o.ElementsOut
	c.BytesIn += o.BytesIn
	c.BytesOut += o.BytesOut
	c.Bundles += o.Bundles
	c.BundleSeconds += o.BundleSeconds
	c.BusySeconds += o.BusySeconds
	c.IdleSeconds += o.IdleSeconds
	c.BackpressuredSeconds += o.BackpressuredSeconds
}
