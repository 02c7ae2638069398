package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

// series makes n samples 10 s apart of f(i) plus noise from rng.
func series(n int, f func(i int) float64) ([]time.Duration, []float64) {
	ats, vs := make([]time.Duration, n), make([]float64, n)
	for i := range n {
		ats[i], vs[i] = time.Duration(i)*10*time.Second, f(i)
	}
	return ats, vs
}

// TestJudge: flat figures with GC-like noise and spikes pass; leaks of
// memory, goroutines per checkpoint and folders are found, and
// growth within the warm-up third is not judged.
func TestJudge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 180 // 30 minutes of samples
	level := column{title: "rss", rule: ruleLevel, floor: 4}
	floor := column{title: "goroutines", rule: ruleFloor, floor: 5}
	for _, tc := range []struct {
		name  string
		col   column
		f     func(i int) float64
		grows bool
	}{
		{"flat memory with GC sawtooth", level, func(i int) float64 { return 150 + float64(i%7)*6 + rng.Float64()*4 }, false},
		{"flat memory with a spike in the last third", level, func(i int) float64 {
			if i == 170 {
				return 400
			}
			return 150 + rng.Float64()*10
		}, false},
		{"memory leak of 10 KB a second (36 MB an hour)", level, func(i int) float64 { return 150 + float64(i)/10 + rng.Float64()*10 }, true},
		{"growth below the noise", level, func(i int) float64 { return 150 + float64(i)/60 }, false},
		{"warm-up growth, then flat", level, func(i int) float64 { return 50 + min(float64(i), 60)*2 + rng.Float64()*5 }, false},
		{"goroutines in bursts around a base", floor, func(i int) float64 { return 80 + float64(rng.IntN(40)) }, false},
		{"a goroutine leaked per checkpoint", floor, func(i int) float64 { return 80 + float64(i*10) + float64(rng.IntN(40)) }, true},
		{"a goroutine leaked a minute", floor, func(i int) float64 { return 80 + float64(i/6) + float64(rng.IntN(3)) }, true},
		{"checkpoint folders, kept 3 (4 while one is written)", column{rule: ruleFloor}, func(i int) float64 { return 3 + float64(rng.IntN(2)) }, false},
		{"checkpoint folders never removed", column{rule: ruleFloor}, func(i int) float64 { return float64(i * 10) }, true},
		{"shown only", column{rule: ruleShow}, func(i int) float64 { return float64(i * 1000) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ats, vs := series(n, tc.f)
			v := judge(tc.col, ats, vs)
			if v.grows != tc.grows {
				t.Errorf("grows = %v (%s; medians %v %v %v, slope %v/h), want %v", v.grows, v.why, v.start, v.middle, v.end, v.slopePerHour, tc.grows)
			}
		})
	}
}

// TestJudgeTooShort: a handful of samples is shown, never judged.
func TestJudgeTooShort(t *testing.T) {
	ats, vs := series(minSamples-1, func(i int) float64 { return float64(i * 100) })
	if v := judge(column{rule: ruleLevel}, ats, vs); v.judged || v.grows {
		t.Errorf("judged %v grows %v with %d samples", v.judged, v.grows, len(vs))
	}
}

func TestTheilSen(t *testing.T) {
	ats, vs := series(30, func(i int) float64 { return float64(i) })
	vs[5], vs[20] = 1e6, -1e6 // outliers move a least-squares slope, not this one
	if got, want := theilSen(ats, vs), 360.0; got < want*0.95 || got > want*1.05 {
		t.Errorf("slope %v per hour, want about %v", got, want)
	}
}
