package generator

import (
	"math"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
)

// timeline is when, in event time, each event number of one generator
// happens (Beam's GeneratorConfig): the inter-event delay cycles through
// delays, each held for stepLengthSec, and an epoch is one pass through
// them all. Every generator shares it; each has its own event numbers.
type timeline struct {
	baseTime int64   // ms
	delaysUs []int64 // per generator
	stepSec  int64
	// eventsPerEpoch and epochMs are the events and milliseconds of one
	// cycle through delaysUs; unused when it holds one delay.
	eventsPerEpoch int64
	epochMs        int64
	groupSize      int64 // out-of-order group size
}

func newTimeline(c *config.Config) timeline {
	t := timeline{
		baseTime:  c.BaseTimeMillis,
		delaysUs:  interEventDelaysUs(c),
		stepSec:   stepLengthSec(c),
		groupSize: c.OutOfOrderGroupSize,
	}
	if len(t.delaysUs) > 1 {
		for _, d := range t.delaysUs {
			n := t.stepSec * 1_000_000 / d
			t.eventsPerEpoch += n
			t.epochMs += n * d / 1000
		}
	}
	return t
}

// periodUs is RateUnit.rateToPeriodUs: microseconds between events at
// rate, rounded to nearest.
func periodUs(unit config.RateUnit, rate int64) int64 {
	usPerUnit := int64(1_000_000)
	if unit == config.PerMinute {
		usPerUnit = 60_000_000
	}
	return (usPerUnit + rate/2) / rate
}

// interEventDelaysUs is RateShape.interEventDelayUs for every generator:
// the overall rate is shared by NumEventGenerators timelines.
func interEventDelaysUs(c *config.Config) []int64 {
	g := int64(c.NumEventGenerators)
	first, next := int64(c.FirstEventRate), int64(c.NextEventRate)
	if first == next {
		return []int64{periodUs(c.RateUnit, first) * g}
	}
	if c.RateShape == config.Square {
		return []int64{periodUs(c.RateUnit, first) * g, periodUs(c.RateUnit, next) * g}
	}
	const steps = 10
	mid, amp := float64(first+next)/2, float64(first-next)/2
	out := make([]int64, steps)
	for i := range out {
		rate := mid + amp*math.Cos(2*math.Pi*float64(i)/steps)
		out[i] = periodUs(c.RateUnit, javaRound(rate)) * g
	}
	return out
}

func stepLengthSec(c *config.Config) int64 {
	n := int64(10)
	if c.RateShape == config.Square {
		n = 2
	}
	return (int64(c.RatePeriodSec) + n - 1) / n
}

// timestamp is the event time of event number m, in ms
// (timestampAndInterEventDelayUsForEvent).
func (t *timeline) timestamp(m int64) int64 {
	if len(t.delaysUs) == 1 {
		return t.baseTime + m*t.delaysUs[0]/1000
	}
	epoch, n := m/t.eventsPerEpoch, m%t.eventsPerEpoch
	offsetMs := int64(0)
	for _, d := range t.delaysUs {
		cycle := t.stepSec * 1_000_000 / d
		if n < cycle {
			return t.baseTime + epoch*t.epochMs + offsetMs + n*d/1000
		}
		n -= cycle
		offsetMs += cycle * d / 1000
	}
	panic("generator: eventsPerEpoch does not add up") // unreachable: n < eventsPerEpoch
}

// delayUs is the inter-event delay in force at event number m.
func (t *timeline) delayUs(m int64) int64 {
	if len(t.delaysUs) == 1 {
		return t.delaysUs[0]
	}
	n := m % t.eventsPerEpoch
	for _, d := range t.delaysUs {
		cycle := t.stepSec * 1_000_000 / d
		if n < cycle {
			return d
		}
		n -= cycle
	}
	return t.delaysUs[len(t.delaysUs)-1]
}

// adjusted is the event number whose id and timestamp the n-th event of
// a generator takes: n shuffled within its group of groupSize
// (nextAdjustedEventNumber).
func (t *timeline) adjusted(n int64) int64 {
	g := t.groupSize
	return n/g*g + n*953%g
}

// groupStart is the first event number of n's group: no event at or after
// n has an earlier timestamp than it (nextEventNumberForWatermark).
func (t *timeline) groupStart(n int64) int64 {
	return n / t.groupSize * t.groupSize
}

// javaRound is Java's Math.round on a double: half rounds up.
func javaRound(x float64) int64 {
	f := math.Floor(x)
	if x-f >= 0.5 {
		f++
	}
	return int64(f)
}
