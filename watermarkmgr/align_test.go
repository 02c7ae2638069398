package watermarkmgr

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

func st(wm mtime.Time) SplitState              { return SplitState{Watermark: wm} }
func paused(wm mtime.Time) SplitState          { return SplitState{Watermark: wm, Paused: true} }
func idle(wm mtime.Time) SplitState            { return SplitState{Watermark: wm, Idle: true} }
func ended() SplitState                        { return SplitState{Watermark: mtime.MaxTimestamp, Ended: true} }
func reports(r ...[]SplitState) [][]SplitState { return r }

// quiet is a running split without known backlog, quiet for q.
func quiet(wm mtime.Time, q time.Duration) SplitState { return SplitState{Watermark: wm, Quiet: q} }

// TestGroupAnnouncements drives a group through rounds of reports, one
// Tick an interval apart, and checks each announcement and decision.
func TestGroupAnnouncements(t *testing.T) {
	const inf, ninf = mtime.MaxTimestamp, mtime.MinTimestamp
	type round struct {
		reports   map[string][]SplitState
		min, max  mtime.Time
		bound     mtime.Time
		decisions map[string][]bool
	}
	for _, tc := range []struct {
		name   string
		buffer int
		rounds []round
	}{
		{"the split past min + drift is paused alone", 0, []round{{
			reports: map[string][]SplitState{"a": {st(100), st(115), st(111)}, "b": {st(105)}},
			min:     100, max: 115, bound: 110,
			decisions: map[string][]bool{"a": {false, true, true}, "b": {false}},
		}}},
		{"a paused split resumes once back under the bound", 0, []round{
			{reports: map[string][]SplitState{"a": {st(100), st(120)}},
				min: 100, max: 120, bound: 110, decisions: map[string][]bool{"a": {false, true}}},
			{reports: map[string][]SplitState{"a": {st(105), paused(120)}},
				min: 105, max: 120, bound: 115, decisions: map[string][]bool{"a": {false, true}}},
			{reports: map[string][]SplitState{"a": {st(110), paused(120)}},
				min: 110, max: 120, bound: 120, decisions: map[string][]bool{"a": {false, false}}},
		}},
		{"no splits at all: bound +inf (FLINK-32414)", 0, []round{
			{reports: map[string][]SplitState{"a": {}}, min: inf, max: inf, bound: inf,
				decisions: map[string][]bool{"a": {}}},
		}},
		{"a reader with no splits holds nothing back (FLINK-32414)", 0, []round{
			{reports: map[string][]SplitState{"a": {}, "b": {st(100), st(200)}}, min: 100, max: 200, bound: 110,
				decisions: map[string][]bool{"a": {}, "b": {false, true}}},
		}},
		{"all idle: the bound saturates at +inf, nothing paused (FLINK-31632)", 0, []round{
			{reports: map[string][]SplitState{"a": {idle(100), idle(inf - 5)}}, min: inf, max: inf, bound: inf,
				decisions: map[string][]bool{"a": {false, false}}},
		}},
		{"min + drift near +inf saturates (FLINK-31632)", 0, []round{
			{reports: map[string][]SplitState{"a": {st(inf - 3)}}, min: inf - 3, max: inf - 3, bound: inf,
				decisions: map[string][]bool{"a": {false}}},
		}},
		{"ended splits neither count nor pause (FLINK-35157, FLINK-38477)", 0, []round{
			{reports: map[string][]SplitState{"a": {ended(), st(100)}, "b": {ended(), ended()}}, min: 100, max: 100, bound: 110,
				decisions: map[string][]bool{"a": {false, false}, "b": {false, false}}},
		}},
		{"an idle slow split leaves the minimum: the paused split resumes (FLINK-32496)", 0, []round{
			{reports: map[string][]SplitState{"a": {st(100), st(150)}}, min: 100, max: 150, bound: 110,
				decisions: map[string][]bool{"a": {false, true}}},
			{reports: map[string][]SplitState{"a": {idle(100), paused(150)}}, min: 150, max: 150, bound: 160,
				decisions: map[string][]bool{"a": {false, false}}},
		}},
		{"an idle split is never paused", 0, []round{
			{reports: map[string][]SplitState{"a": {st(100), idle(500)}}, min: 100, max: 100, bound: 110,
				decisions: map[string][]bool{"a": {false, false}}},
		}},
		{"a paused split stays in the minimum", 0, []round{
			{reports: map[string][]SplitState{"a": {paused(100), st(105)}}, min: 100, max: 105, bound: 110,
				decisions: map[string][]bool{"a": {false, false}}},
		}},
		{"-inf before the first record pauses the splits ahead", 0, []round{
			{reports: map[string][]SplitState{"a": {st(ninf), st(100)}}, min: ninf, max: 100, bound: ninf + 10,
				decisions: map[string][]bool{"a": {false, true}}},
		}},
		{"buffer 3: paused once its watermark of two samples ago is past the bound (FLINK-37399)", 3, []round{
			{reports: map[string][]SplitState{"a": {st(100), st(105)}}, min: 100, max: 105, bound: 110,
				decisions: map[string][]bool{"a": {false, false}}},
			{reports: map[string][]SplitState{"a": {st(100), st(130)}}, min: 100, max: 130, bound: 110,
				decisions: map[string][]bool{"a": {false, false}}}, // oldest 105
			{reports: map[string][]SplitState{"a": {st(100), st(150)}}, min: 100, max: 150, bound: 110,
				decisions: map[string][]bool{"a": {false, false}}}, // oldest 105
			{reports: map[string][]SplitState{"a": {st(100), st(160)}}, min: 100, max: 160, bound: 110,
				decisions: map[string][]bool{"a": {false, true}}}, // oldest 130
			{reports: map[string][]SplitState{"a": {st(155), paused(160)}}, min: 155, max: 160, bound: 165,
				decisions: map[string][]bool{"a": {false, false}}}, // resumes on its current watermark
		}},
		// Dry splits: the default DryAfter is 3 intervals (3 s) with buffer 0.
		{"a dry slowest split stops holding the bound but stays in Min; the paused split resumes", 0, []round{
			{reports: map[string][]SplitState{"a": {quiet(100, 2999*time.Millisecond), st(150)}}, min: 100, max: 150, bound: 110,
				decisions: map[string][]bool{"a": {false, true}}},
			{reports: map[string][]SplitState{"a": {quiet(100, 3*time.Second), paused(150)}}, min: 100, max: 150, bound: 160,
				decisions: map[string][]bool{"a": {false, false}}},
		}},
		{"a dry split is never paused", 0, []round{
			{reports: map[string][]SplitState{"a": {st(100), quiet(500, time.Minute)}}, min: 100, max: 500, bound: 110,
				decisions: map[string][]bool{"a": {false, false}}},
		}},
		{"a split with known backlog is never dry, however quiet", 0, []round{
			{reports: map[string][]SplitState{"a": {{Watermark: 100, Quiet: time.Hour, Backlog: true}, st(150)}}, min: 100, max: 150, bound: 110,
				decisions: map[string][]bool{"a": {false, true}}},
		}},
		{"a paused split is never dry: it holds the bound however long it waits", 0, []round{
			{reports: map[string][]SplitState{"a": {{Watermark: 100, Quiet: time.Hour, Paused: true}, st(150)}}, min: 100, max: 150, bound: 110,
				decisions: map[string][]bool{"a": {false, true}}},
		}},
		{"a record brings a dry split back: it holds the bound at once, the split past it pauses again", 0, []round{
			{reports: map[string][]SplitState{"a": {quiet(100, time.Minute), st(150)}, "b": {st(140)}}, min: 100, max: 150, bound: 150,
				decisions: map[string][]bool{"a": {false, false}, "b": {false}}},
			{reports: map[string][]SplitState{"a": {st(101), st(150)}, "b": {st(140)}}, min: 101, max: 150, bound: 111,
				decisions: map[string][]bool{"a": {false, true}, "b": {true}}},
		}},
		{"every split dry: the bound is +inf, Min still the slowest", 0, []round{
			{reports: map[string][]SplitState{"a": {quiet(100, time.Minute)}, "b": {quiet(200, time.Minute)}}, min: 100, max: 200, bound: inf,
				decisions: map[string][]bool{"a": {false}, "b": {false}}},
		}},
		{"a dry split before its first record (-inf) holds nothing back", 0, []round{
			{reports: map[string][]SplitState{"a": {quiet(ninf, time.Minute), st(100)}}, min: ninf, max: 100, bound: 110,
				decisions: map[string][]bool{"a": {false, false}}},
		}},
		{"buffer 3: dry only after 6 intervals, past the buffer's look-back", 3, []round{
			{reports: map[string][]SplitState{"a": {quiet(100, 5999*time.Millisecond), st(105)}}, min: 100, max: 105, bound: 110,
				decisions: map[string][]bool{"a": {false, false}}},
			{reports: map[string][]SplitState{"a": {quiet(100, 6*time.Second), st(105)}}, min: 100, max: 105, bound: 115,
				decisions: map[string][]bool{"a": {false, false}}},
		}},
		{"buffer 0: paused on its latest watermark", 0, []round{
			{reports: map[string][]SplitState{"a": {st(100), st(105)}}, min: 100, max: 105, bound: 110,
				decisions: map[string][]bool{"a": {false, false}}},
			{reports: map[string][]SplitState{"a": {st(100), st(130)}}, min: 100, max: 130, bound: 110,
				decisions: map[string][]bool{"a": {false, true}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1_700_000_000, 0)
			g := NewGroup(AlignConfig{MaxDrift: 10 * time.Millisecond, Interval: time.Second, Buffer: tc.buffer})
			for i, r := range tc.rounds {
				for reader, states := range r.reports {
					g.Report(reader, states)
				}
				if i > 0 {
					if _, ok := g.Tick(now.Add(-1)); ok {
						t.Fatalf("round %d: announced before the interval passed", i)
					}
				}
				a, ok := g.Tick(now)
				if !ok {
					t.Fatalf("round %d: no announcement", i)
				}
				now = now.Add(time.Second)
				if a.Min != r.min || a.Max != r.max || a.Bound != r.bound {
					t.Errorf("round %d: min %v max %v bound %v, want %v %v %v", i, a.Min, a.Max, a.Bound, r.min, r.max, r.bound)
				}
				for reader, want := range r.decisions {
					if got := g.Paused(reader); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("round %d: reader %s paused %v, want %v", i, reader, got, want)
					}
				}
			}
		})
	}
}

// TestGroupDryAfter: DryAfter defaults to Buffer+3 intervals, a negative
// one turns dryness off, and announcements count the dry splits.
func TestGroupDryAfter(t *testing.T) {
	for _, tc := range []struct {
		cfg   AlignConfig
		quiet time.Duration
		dry   bool
	}{
		{AlignConfig{Interval: time.Second}, 3 * time.Second, true},
		{AlignConfig{Interval: time.Second}, 3*time.Second - 1, false},
		{AlignConfig{Interval: 200 * time.Millisecond, Buffer: 2}, time.Second, true},
		{AlignConfig{Interval: 200 * time.Millisecond, Buffer: 2}, 999 * time.Millisecond, false},
		{AlignConfig{Interval: time.Second, DryAfter: 10 * time.Second}, 9 * time.Second, false},
		{AlignConfig{Interval: time.Second, DryAfter: 10 * time.Second}, 10 * time.Second, true},
		{AlignConfig{Interval: time.Second, DryAfter: -1}, 1000 * time.Hour, false},
	} {
		tc.cfg.MaxDrift = 10 * time.Millisecond
		g := NewGroup(tc.cfg)
		g.Report("r", []SplitState{quiet(100, tc.quiet), st(200)})
		a, _ := g.Tick(time.Unix(0, 0))
		wantBound, wantDry := mtime.Time(110), 0
		if tc.dry {
			wantBound, wantDry = 210, 1
		}
		if a.Bound != wantBound || a.Dry != wantDry || a.Min != 100 {
			t.Errorf("%+v, quiet %v: %+v, want min 100, bound %v, %d dry", tc.cfg, tc.quiet, a, wantBound, wantDry)
		}
	}
}

func TestGroupLeave(t *testing.T) {
	g := NewGroup(AlignConfig{MaxDrift: 10 * time.Millisecond})
	now := time.Unix(0, 0)
	g.Report("slow", []SplitState{st(0)})
	g.Report("fast", []SplitState{st(100)})
	g.Tick(now)
	if p := g.Paused("fast"); !p[0] {
		t.Fatalf("fast not paused: %v", p)
	}
	// The slow reader runs out of splits and leaves (FLINK-37670).
	g.Leave("slow")
	g.Tick(now.Add(time.Second))
	if p := g.Paused("fast"); p[0] {
		t.Fatalf("fast still paused after the slow reader left")
	}
	if g.Paused("slow") != nil {
		t.Error("a reader that left still has decisions")
	}
}

// simSplit is a split in a simulated backfill: while running, each step
// it reads one record rate ms of event time after the last, until it
// runs dry at dryAt (then it is quiet) or ends at endAt.
type simSplit struct {
	rate         mtime.Time
	dryAt, endAt mtime.Time // 0: never
	next         mtime.Time
	pausedByKgo  bool
	ended        bool
}

// TestAlignmentSimulation runs readers over fake processing time, with the
// reader loop a Kafka reader runs (record, Tick, Report, group Tick, apply
// decisions), and checks the cases that hung Flink jobs make progress.
func TestAlignmentSimulation(t *testing.T) {
	const step = 10 * time.Millisecond
	for _, tc := range []struct {
		name    string
		readers [][]simSplit
		buffer  int
		noIdle  bool // no idle timeout: only dryness releases a dry split's hold
		// want: every split that has not run dry or ended reaches this
		// event time within the steps.
		want  mtime.Time
		steps int
	}{
		{"uneven speeds converge, no hang", [][]simSplit{
			{{rate: 1}, {rate: 7}}, {{rate: 3}},
		}, 0, false, 500, 2000},
		{"uneven speeds, buffer 3", [][]simSplit{
			{{rate: 1}, {rate: 7}}, {{rate: 3}},
		}, 3, false, 500, 2000},
		{"a reader with no splits (FLINK-32414)", [][]simSplit{
			{}, {{rate: 1}, {rate: 5}},
		}, 0, false, 500, 2000},
		{"the slow split runs dry and goes idle: the paused ones resume (FLINK-32496)", [][]simSplit{
			{{rate: 1, dryAt: 50}, {rate: 5}},
		}, 0, false, 2000, 2000},
		{"a reader whose splits all end (FLINK-35157)", [][]simSplit{
			{{rate: 1, endAt: 30}}, {{rate: 4}, {rate: 2}},
		}, 3, false, 1000, 2000},
		{"every split empty but one", [][]simSplit{
			{{rate: 2}, {dryAt: -1}}, {{dryAt: -1}},
		}, 0, false, 1000, 2000},
		{"no idle timeout: the slow split runs dry, stops holding the bound, the paused ones go on", [][]simSplit{
			{{rate: 1, dryAt: 50}, {rate: 5}}, {{rate: 3, dryAt: 300}, {rate: 2}},
		}, 0, true, 2000, 2000},
		{"no idle timeout, buffer 3: the slow split runs dry", [][]simSplit{
			{{rate: 1, dryAt: 50}, {rate: 5}},
		}, 3, true, 2000, 2000},
		{"no idle timeout: splits empty from the start", [][]simSplit{
			{{rate: 2}, {dryAt: -1}}, {{dryAt: -1}},
		}, 0, true, 1000, 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1_700_000_000, 0)
			g := NewGroup(AlignConfig{MaxDrift: 20 * time.Millisecond, Interval: 5 * step, Buffer: tc.buffer})
			trackers := make([]*Splits, len(tc.readers))
			for r, splits := range tc.readers {
				cfg := SplitsConfig{IdleTimeout: 20 * step}
				if tc.noIdle {
					cfg.IdleTimeout = 0
				}
				trackers[r] = NewSplits(len(splits), cfg, now)
			}
			maxSpread := time.Duration(0)
			for range tc.steps {
				now = now.Add(step)
				for r, splits := range tc.readers {
					sp := trackers[r]
					for i := range splits {
						x := &splits[i]
						if x.ended || x.pausedByKgo {
							continue
						}
						if x.endAt != 0 && x.next >= x.endAt {
							x.ended = true
							if err := sp.End(SplitID(i)); err != nil {
								t.Fatal(err)
							}
							continue
						}
						if x.dryAt != 0 && x.next >= x.dryAt || x.dryAt < 0 {
							continue
						}
						x.next += x.rate
						if _, err := sp.Record(SplitID(i), x.next, now); err != nil {
							t.Fatal(err)
						}
					}
					if _, err := sp.Tick(now); err != nil {
						t.Fatal(err)
					}
					g.Report(fmt.Sprint(r), sp.States(nil))
				}
				a, ok := g.Tick(now)
				if !ok {
					continue
				}
				// The spread the bound governs: from the slowest split that
				// holds it (a dry one is in Min but not in the bound).
				spread := a.Spread()
				switch hold := a.Bound - 20; {
				case a.Bound == mtime.MaxTimestamp && a.Dry > 0:
					spread = 0 // every split that counts is dry
				case a.Bound != mtime.MaxTimestamp && hold > a.Min:
					spread = time.Duration(max(a.Max-hold, 0)) * time.Millisecond
				}
				maxSpread = max(maxSpread, spread)
				for r, splits := range tc.readers {
					for i, p := range g.Paused(fmt.Sprint(r)) {
						x := &splits[i]
						if p == x.pausedByKgo {
							continue
						}
						x.pausedByKgo = p
						var err error
						if p {
							err = trackers[r].Pause(SplitID(i), now)
						} else {
							err = trackers[r].Resume(SplitID(i), now)
						}
						if err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			for r, splits := range tc.readers {
				for i, x := range splits {
					if x.dryAt != 0 && tc.noIdle && trackers[r].Output() > x.next {
						t.Errorf("reader %d: output watermark %v passed dry split %d at %v with no idle timeout",
							r, trackers[r].Output(), i, x.next)
					}
					if x.ended || x.dryAt != 0 {
						continue
					}
					if x.next < tc.want {
						t.Errorf("reader %d split %d stuck at %v (paused %v), want past %v; group %+v", r, i, x.next, x.pausedByKgo, tc.want, g.Last())
					}
				}
			}
			// Each split moves at most 7 ms of event time per step, and the
			// group announces every 5 steps: with buffer b, a split runs at most
			// b+1 intervals past the bound.
			if limit := 20*time.Millisecond + time.Duration(tc.buffer+1)*5*7*time.Millisecond; maxSpread > limit {
				t.Errorf("spread reached %v, want at most %v", maxSpread, limit)
			}
		})
	}
}

// TestGroupPausesBetweenAnnouncements: with buffer 0 a split that passes
// the announced bound is paused at its reader's next report, without
// waiting for the next announcement; with a buffer, its old samples decide,
// and they change only at announcements.
func TestGroupPausesBetweenAnnouncements(t *testing.T) {
	for _, tc := range []struct {
		buffer int
		want   bool
	}{{0, true}, {3, false}} {
		g := NewGroup(AlignConfig{MaxDrift: 10 * time.Millisecond, Buffer: tc.buffer})
		g.Report("r", []SplitState{st(100), st(105)})
		g.Tick(time.Unix(0, 0))
		g.Report("r", []SplitState{st(101), st(500)}) // no announcement: the bound is still 110
		if got := g.Paused("r"); got[0] || got[1] != tc.want {
			t.Errorf("buffer %d: paused %v, want [false %v]", tc.buffer, got, tc.want)
		}
	}
}

// TestGroupBoundIsNeverStale: between announcements the slowest split moves
// on; a bound from the last announcement would pause it (and with it every
// split: Flink's cap of one drift per interval), the live bound does not.
func TestGroupBoundIsNeverStale(t *testing.T) {
	g := NewGroup(AlignConfig{MaxDrift: 10 * time.Millisecond})
	g.Report("r", []SplitState{st(100), st(105)})
	g.Tick(time.Unix(0, 0)) // announces bound 110
	g.Report("r", []SplitState{st(120), st(125)})
	if got := g.Paused("r"); got[0] || got[1] {
		t.Errorf("paused %v after the slowest split moved to 120; want neither", got)
	}
	if a := g.Last(); a.Bound != 110 {
		t.Errorf("announcement changed without a Tick: %+v", a)
	}
}
