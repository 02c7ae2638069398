package watermarkmgr

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

func TestGroupHold(t *testing.T) {
	const inf, ninf = mtime.MaxTimestamp, mtime.MinTimestamp
	for _, tc := range []struct {
		name   string
		drift  time.Duration
		states []SplitState
		want   HoldBound
	}{
		{"minimum plus the drift", 10 * time.Millisecond, []SplitState{st(100), st(300), paused(200)}, HoldBound{100, 110}},
		{"idle and ended splits do not hold", 10 * time.Millisecond, []SplitState{idle(5), ended(), st(300)}, HoldBound{300, 310}},
		{"a dry split does not hold", 10 * time.Millisecond, []SplitState{quiet(5, time.Hour), st(300)}, HoldBound{300, 310}},
		{"a quiet split with a backlog (held records) holds", 10 * time.Millisecond,
			[]SplitState{{Watermark: 5, Quiet: time.Hour, Backlog: true}, st(300)}, HoldBound{5, 15}},
		{"nothing holds: +inf, no overflow", 10 * time.Millisecond, []SplitState{idle(5), ended()}, HoldBound{inf, inf}},
		{"no watermark yet: -inf plus the drift", 10 * time.Millisecond, []SplitState{st(ninf), st(300)}, HoldBound{ninf, ninf + 10}},
		{"drift 0", 0, []SplitState{st(100), st(300)}, HoldBound{100, 100}},
	} {
		g := NewGroup(AlignConfig{MaxDrift: tc.drift, Interval: time.Second})
		g.Report("r", tc.states)
		if got := g.Hold(); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestHoldBoundAdmits(t *testing.T) {
	const inf, ninf = mtime.MaxTimestamp, mtime.MinTimestamp
	for _, tc := range []struct {
		name  string
		b     HoldBound
		wm, t mtime.Time
		ooo   time.Duration
		want  bool
	}{
		{"under the bound", HoldBound{100, 110}, 105, 109, 0, true},
		{"at the bound", HoldBound{100, 110}, 105, 110, 0, true},
		{"past the bound", HoldBound{100, 110}, 105, 111, 0, false},
		{"out of order but past the bound", HoldBound{100, 110}, 120, 115, 0, false},
		{"out of order under the bound", HoldBound{100, 110}, 120, 90, 0, true},
		{"the split at the minimum delivers whatever comes", HoldBound{100, 110}, 100, 5000, 0, true},
		{"below the minimum too (a dry split back with a record)", HoldBound{100, 110}, 50, 5000, 0, true},
		{"every split at -inf: each delivers", HoldBound{ninf, ninf + 10}, ninf, 5000, 0, true},
		{"one split at -inf holds the rest back", HoldBound{ninf, ninf + 10}, 1, 2, 0, false},
		{"out-of-orderness: the watermark the record implies", HoldBound{100, 110}, 105, 115, 5 * time.Millisecond, true},
		{"out-of-orderness: past", HoldBound{100, 110}, 105, 116, 5 * time.Millisecond, false},
		{"drift 0: only the minimum moves", HoldBound{100, 100}, 101, 102, 0, false},
		{"drift 0: the minimum moves", HoldBound{100, 100}, 100, 102, 0, true},
		{"nothing holds", HoldBound{inf, inf}, 100, inf, 0, true},
	} {
		if got := tc.b.Admits(tc.wm, tc.t, tc.ooo); got != tc.want {
			t.Errorf("%s: Admits(%v, %v, %v) under %+v = %v, want %v", tc.name, tc.wm, tc.t, tc.ooo, tc.b, got, tc.want)
		}
	}
}

// TestHoldSimulation runs a backfill over fake processing time with the
// loop the Kafka reader runs: splits fetch several records at once while
// not paused, hold what the bound does not admit (Pending), deliver the
// rest, and stay paused while they hold records. Splits read at uneven
// speeds in event time (records per fetch, up to skew times the slowest).
// With holding, what a step delivers past the output watermark before it
// stays within the drift plus one record's gap at every skew; delivering
// whole fetches, as pausing alone does, it grows with the fetch. Every
// record arrives, in order.
func TestHoldSimulation(t *testing.T) {
	const (
		n       = 12
		records = 600
		gap     = 60 // ms of event time between a split's records
		drift   = 30
	)
	for _, skew := range []int{1, 4, 12} {
		for _, hold := range []bool{true, false} {
			t.Run(fmt.Sprintf("skew %d hold %v", skew, hold), func(t *testing.T) {
				now := time.Unix(0, 0)
				g := NewGroup(AlignConfig{MaxDrift: drift * time.Millisecond, Interval: 100 * time.Millisecond})
				s := NewSplits(n, SplitsConfig{}, now)
				fetched := make([]int, n) // records fetched per split
				delivered := make([]int, n)
				held := make([][]mtime.Time, n)
				paused := make([]bool, n)
				ended := make([]bool, n)
				// Split k's j-th record. The splits start 7k ms apart, within
				// the drift: each split's first record is delivered whatever
				// it is, since every split is at -inf then (HoldBound.Admits).
				at := func(k, j int) mtime.Time { return mtime.Time(7*k + gap*j) }
				perFetch := func(k int) int { return 5 * (11 + k*(skew-1)) / 11 }
				states := func() []SplitState {
					out := s.States(nil)
					for k := range out {
						out[k].Backlog = len(held[k]) > 0 || fetched[k] < records
					}
					return out
				}
				maxOver := mtime.Time(0)
				for step := 0; ; step++ {
					if step > 100_000 {
						t.Fatalf("stuck: delivered %v", delivered)
					}
					now = now.Add(10 * time.Millisecond)
					for k := range n {
						if paused[k] || ended[k] {
							continue
						}
						for range perFetch(k) {
							if fetched[k] < records {
								held[k] = append(held[k], at(k, fetched[k]))
								fetched[k]++
							}
						}
						if len(held[k]) > 0 {
							if err := s.Pending(SplitID(k), now); err != nil {
								t.Fatal(err)
							}
						}
					}
					// One round a step, as the reader's poll: the source emits
					// the watermark between polls, so what a step delivers
					// past the output watermark before it is what the
					// stateful stages hold before that watermark reaches them.
					before := s.Output()
					g.Report("r", states())
					b := g.Hold()
					stepMax := mtime.MinTimestamp
					for k := range n {
						for len(held[k]) > 0 && (!hold || b.Admits(s.Watermark(SplitID(k)), held[k][0], 0)) {
							if want := at(k, delivered[k]); held[k][0] != want {
								t.Fatalf("split %d delivered %v, want %v", k, held[k][0], want)
							}
							if _, err := s.Record(SplitID(k), held[k][0], now); err != nil {
								t.Fatal(err)
							}
							stepMax = max(stepMax, held[k][0])
							held[k] = held[k][1:]
							delivered[k]++
						}
					}
					if before > mtime.MinTimestamp && stepMax > mtime.MinTimestamp {
						maxOver = max(maxOver, stepMax-before)
					}
					for k := range n {
						if !ended[k] && delivered[k] == records {
							ended[k] = true
							paused[k] = false
							if err := s.End(SplitID(k)); err != nil {
								t.Fatal(err)
							}
						}
					}
					if _, err := s.Tick(now); err != nil {
						t.Fatal(err)
					}
					g.Report("r", states())
					g.Tick(now)
					for k, p := range g.Paused("r") {
						if ended[k] {
							continue
						}
						p = p || len(held[k]) > 0
						if p != paused[k] {
							paused[k] = p
							if p {
								s.Pause(SplitID(k), now)
							} else {
								s.Resume(SplitID(k), now)
							}
						}
					}
					done := true
					for k := range n {
						done = done && ended[k]
					}
					if done {
						break
					}
				}
				// The slowest split may deliver one record past the bound.
				limit := mtime.Time(drift + gap)
				if hold && maxOver > limit {
					t.Errorf("delivered up to %d ms past the output watermark, want at most drift + one gap, %d", maxOver, limit)
				}
				if !hold && skew == 12 && maxOver <= limit {
					t.Errorf("without holding, only %d ms past the output watermark: the simulation does not show the fetch overshoot", maxOver)
				}
				t.Logf("skew %d, hold %v: up to %d ms past the output watermark", skew, hold, maxOver)
			})
		}
	}
}
