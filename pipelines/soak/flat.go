package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Flatness: each figure's samples are cut in thirds by time. The first
// third is the warm-up (caches, the JIT of the broker, the first
// windows), shown but not judged; the middle third is the baseline and
// the last third is compared with it. Medians, not means, and a
// Theil-Sen slope (the median of the slopes between every two samples of
// the last two thirds), not a least-squares one, so that a garbage
// collection or a compaction caught by one sample moves nothing.

// rule says how a figure is judged.
type rule int

const (
	// shown only.
	ruleShow rule = iota
	// ruleLevel judges a figure that wanders (memory, bytes on disk,
	// lags): it grows when its median rose by more than the noise floor
	// from the middle third to the last, and both that rise and the
	// slope extrapolate to more than maxGrowthPerHour of the middle
	// third's median per hour.
	ruleLevel
	// ruleFloor judges a count that comes back to a base between bursts
	// (goroutines, open files, folders, messages): it grows when its
	// least value rose by more than the noise floor from the middle
	// third to the last and the slope is positive. A leak of one per
	// checkpoint raises the base by hundreds in a third of a long run;
	// bursts of work do not raise it.
	ruleFloor
)

// maxGrowthPerHour is the growth of a level figure, relative to its
// baseline, past which it is a finding.
const maxGrowthPerHour = 0.10

// column is one figure of the samples.
type column struct {
	name  string // CSV header
	title string // the table's name of it, with its unit
	get   func(sample) float64
	rule  rule
	floor float64 // the change in the figure's unit that is noise
}

// verdict is one figure's summary and judgement.
type verdict struct {
	col                column
	start, middle, end float64 // medians of the thirds
	minMiddle, minEnd  float64
	slopePerHour       float64 // Theil-Sen over the last two thirds, in the figure's unit per hour
	growthPerHour      float64 // (end - middle) per hour, relative to middle
	grows, judged      bool
	why                string
}

// minSamples is the fewest samples that can be judged: two per third.
const minSamples = 6

// judge summarises values, taken at times ats, by c's rule.
func judge(c column, ats []time.Duration, values []float64) verdict {
	v := verdict{col: c}
	n := len(values)
	if n < 3 {
		return v
	}
	a, b := n/3, 2*n/3
	v.start, v.middle, v.end = median(values[:a]), median(values[a:b]), median(values[b:])
	v.minMiddle, v.minEnd = slices.Min(values[a:b]), slices.Min(values[b:])
	v.slopePerHour = theilSen(ats[a:], values[a:])
	hours := (mid(ats[b:]) - mid(ats[a:b])).Hours()
	if hours > 0 {
		v.growthPerHour = (v.end - v.middle) / hours / math.Max(math.Abs(v.middle), 1e-9)
	}
	if c.rule == ruleShow || n < minSamples {
		return v
	}
	v.judged = true
	switch c.rule {
	case ruleLevel:
		rise := v.end - v.middle
		limit := maxGrowthPerHour * math.Abs(v.middle)
		if rise > c.floor && v.growthPerHour > maxGrowthPerHour && v.slopePerHour > limit {
			v.grows = true
			v.why = fmt.Sprintf("median %s → %s (%+.0f%%/h), slope %s/h", num(v.middle), num(v.end),
				100*v.growthPerHour, num(v.slopePerHour))
		}
	case ruleFloor:
		if rise := v.minEnd - v.minMiddle; rise > c.floor && v.slopePerHour > 0 {
			v.grows = true
			v.why = fmt.Sprintf("least value %s → %s, slope %s/h", num(v.minMiddle), num(v.minEnd), num(v.slopePerHour))
		}
	}
	return v
}

// theilSen is the median of the slopes, per hour, between every two
// samples taken at different times.
func theilSen(ats []time.Duration, values []float64) float64 {
	var slopes []float64
	for i := range values {
		for j := i + 1; j < len(values); j++ {
			if dt := (ats[j] - ats[i]).Hours(); dt > 0 {
				slopes = append(slopes, (values[j]-values[i])/dt)
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	return median(slopes)
}

// median of xs, which it leaves unchanged; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// mid is the middle of the span the times cover.
func mid(ats []time.Duration) time.Duration { return (ats[0] + ats[len(ats)-1]) / 2 }

// num prints a figure with as many digits as it needs.
func num(x float64) string {
	switch ax := math.Abs(x); {
	case ax == 0:
		return "0"
	case ax >= 100:
		return fmt.Sprintf("%.0f", x)
	case ax >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}
