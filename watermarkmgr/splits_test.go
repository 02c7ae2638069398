package watermarkmgr

import (
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// splitStep is one event in a Splits table test, at fake processing time
// At (milliseconds after the start).
type splitStep struct {
	at     int64
	op     string // "record", "tick", "pause", "resume", "end", "pending"
	split  SplitID
	t      mtime.Time // record: event time
	wantWM mtime.Time // the output watermark after the step (Output)
	late   bool       // record: want it reported late
	idled  []SplitID  // tick: want these newly idle
	status string     // if set, want Status() after the step
}

func TestSplits(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	const inf, ninf = mtime.MaxTimestamp, mtime.MinTimestamp
	for _, tc := range []struct {
		name  string
		n     int
		cfg   SplitsConfig
		steps []splitStep
	}{
		// Idle, holding nothing back, with no watermark: +inf would claim
		// the end of time for a reader that only has nothing to read.
		{"no splits: idle, no watermark", 0, SplitsConfig{IdleTimeout: time.Second}, []splitStep{
			{at: 0, op: "tick", wantWM: ninf, status: "idle"},
		}},
		{"bounded out-of-orderness per split, minimum over splits", 2, SplitsConfig{OutOfOrderness: 5 * time.Millisecond}, []splitStep{
			{at: 0, op: "record", split: 0, t: 100, wantWM: ninf},
			{at: 1, op: "record", split: 1, t: 50, wantWM: 45},
			{at: 2, op: "record", split: 1, t: 80, wantWM: 75},
			{at: 3, op: "record", split: 1, t: 77, wantWM: 75},             // behind max, not late
			{at: 4, op: "record", split: 1, t: 70, wantWM: 75, late: true}, // behind the watermark
			{at: 5, op: "record", split: 0, t: 200, wantWM: 75},
			{at: 6, op: "record", split: 1, t: 300, wantWM: 195},
		}},
		{"out-of-orderness saturates at -inf", 1, SplitsConfig{OutOfOrderness: time.Hour}, []splitStep{
			{at: 0, op: "record", split: 0, t: ninf + 10, wantWM: ninf},
		}},
		{"a quiet split goes idle and rejoins on its next record", 2, SplitsConfig{IdleTimeout: 10 * time.Millisecond}, []splitStep{
			{at: 0, op: "record", split: 0, t: 100, wantWM: ninf},
			{at: 1, op: "record", split: 1, t: 10, wantWM: 10},
			{at: 9, op: "record", split: 0, t: 110, wantWM: 10},
			{at: 10, op: "tick", wantWM: 10},
			{at: 11, op: "tick", idled: []SplitID{1}, wantWM: 110},
			{at: 15, op: "record", split: 0, t: 120, wantWM: 120},
			// back, behind the output: it holds the output where it is
			{at: 16, op: "record", split: 1, t: 20, late: true, wantWM: 120},
			{at: 17, op: "record", split: 0, t: 130, wantWM: 120},
			{at: 18, op: "record", split: 1, t: 125, wantWM: 125},
		}},
		{"an empty split goes idle, so it does not freeze the output", 2, SplitsConfig{IdleTimeout: 10 * time.Millisecond}, []splitStep{
			{at: 5, op: "record", split: 0, t: 100, wantWM: ninf},
			{at: 10, op: "tick", idled: []SplitID{1}, wantWM: 100},
		}},
		{"a paused split is never idle (FLINK-35886)", 2, SplitsConfig{IdleTimeout: 10 * time.Millisecond}, []splitStep{
			{at: 0, op: "record", split: 0, t: 100, wantWM: ninf},
			{at: 0, op: "record", split: 1, t: 500, wantWM: 100},
			{at: 5, op: "pause", split: 1, wantWM: 100},
			{at: 9, op: "record", split: 0, t: 200, wantWM: 200},
			{at: 1000, op: "record", split: 0, t: 300, wantWM: 300},
			{at: 1000, op: "tick", wantWM: 300},
			// resumed, its clock goes on from 5 ms: idle 5 ms later
			{at: 1001, op: "resume", split: 1, wantWM: 300},
			{at: 1005, op: "tick", wantWM: 300},
			{at: 1006, op: "tick", idled: []SplitID{1}, wantWM: 300},
		}},
		{"a paused split holds the output even past the idle timeout", 2, SplitsConfig{IdleTimeout: 10 * time.Millisecond}, []splitStep{
			{at: 0, op: "record", split: 0, t: 100, wantWM: ninf},
			{at: 0, op: "record", split: 1, t: 50, wantWM: 50},
			{at: 1, op: "pause", split: 1, wantWM: 50},
			{at: 100, op: "record", split: 0, t: 300, wantWM: 50},
			{at: 500, op: "tick", idled: []SplitID{0}, wantWM: 50},
		}},
		{"ended splits are +inf; all ended is +inf", 2, SplitsConfig{}, []splitStep{
			{at: 0, op: "record", split: 0, t: 100, wantWM: ninf},
			{at: 0, op: "end", split: 1, wantWM: 100, status: "active"},
			{at: 0, op: "end", split: 0, wantWM: inf, status: "active"},
		}},
		// Splits idle in order: once split 0 has left, the minimum is split 1's,
		// and when it leaves too there is nothing to take the minimum of.
		{"all idle: the output stays where the last one left it", 2, SplitsConfig{IdleTimeout: 10 * time.Millisecond}, []splitStep{
			{at: 0, op: "record", split: 0, t: 100, wantWM: ninf},
			{at: 0, op: "record", split: 1, t: 200, wantWM: 100},
			{at: 20, op: "tick", idled: []SplitID{0, 1}, wantWM: 200, status: "idle"},
			{at: 30, op: "record", split: 0, t: 150, late: true, wantWM: 200, status: "active"},
		}},
		{"a split with pending records is active: its clock restarts, it leaves idleness, its watermark stays", 2, SplitsConfig{IdleTimeout: 10 * time.Millisecond}, []splitStep{
			{at: 0, op: "record", split: 0, t: 100, wantWM: ninf},
			{at: 0, op: "record", split: 1, t: 50, wantWM: 50},
			{at: 8, op: "pending", split: 1, wantWM: 50},
			{at: 12, op: "record", split: 0, t: 110, wantWM: 50},
			{at: 12, op: "tick", idled: nil, wantWM: 50}, // split 1 quiet 4 ms only
			{at: 20, op: "record", split: 0, t: 120, wantWM: 50},
			{at: 22, op: "tick", idled: []SplitID{1}, wantWM: 120},
			// pending brings it back into the minimum at its watermark: the
			// output does not go back, but waits for it again
			{at: 23, op: "pending", split: 1, wantWM: 120},
			{at: 24, op: "record", split: 0, t: 300, wantWM: 120},
			{at: 25, op: "record", split: 1, t: 200, wantWM: 200},
		}},
		{"processing time going back moves no clock", 1, SplitsConfig{IdleTimeout: 10 * time.Millisecond}, []splitStep{
			{at: 5, op: "record", split: 0, t: 1, wantWM: 1},
			{at: 0, op: "tick", wantWM: 1},
			{at: 14, op: "tick", wantWM: 1},
			{at: 15, op: "tick", idled: []SplitID{0}, wantWM: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSplits(tc.n, tc.cfg, start)
			for i, st := range tc.steps {
				now := start.Add(time.Duration(st.at) * time.Millisecond)
				var err error
				switch st.op {
				case "record":
					var late bool
					late, err = s.Record(st.split, st.t, now)
					if late != st.late {
						t.Errorf("step %d: late %v, want %v", i, late, st.late)
					}
				case "tick":
					var idled []SplitID
					idled, err = s.Tick(now)
					if !equalIDs(idled, st.idled) {
						t.Errorf("step %d: idled %v, want %v", i, idled, st.idled)
					}
				case "pause":
					err = s.Pause(st.split, now)
				case "resume":
					err = s.Resume(st.split, now)
				case "end":
					err = s.End(st.split)
				case "pending":
					err = s.Pending(st.split, now)
				default:
					t.Fatalf("step %d: unknown op %q", i, st.op)
				}
				if err != nil {
					t.Fatalf("step %d (%s): %v", i, st.op, err)
				}
				if got := s.Output(); got != st.wantWM {
					t.Fatalf("step %d (%s): output %v, want %v", i, st.op, got, st.wantWM)
				}
				if got := s.Status().String(); st.status != "" && got != st.status {
					t.Errorf("step %d (%s): status %s, want %s", i, st.op, got, st.status)
				}
			}
		})
	}
}

func TestSplitsErrors(t *testing.T) {
	s := NewSplits(1, SplitsConfig{}, time.Time{})
	if _, err := s.Record(1, 0, time.Time{}); err == nil {
		t.Error("record on split 1 of 1: no error")
	}
	if err := s.End(0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(0, 0, time.Time{}); err == nil {
		t.Error("record after end: no error")
	}
	if err := s.End(0); err != nil {
		t.Errorf("ending twice: %v", err)
	}
}

func equalIDs(a, b []SplitID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSplitsRestore takes the marks and output of a reader's splits and
// restores them into a new tracker, as a restored Kafka read does: each
// split's watermark and idleness come back, the activity clock goes on
// where it stopped, and the output is where it was, even when the
// restored minimum is below it (a split back from idleness, behind).
func TestSplitsRestore(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	at := func(ms int64) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	cfg := SplitsConfig{OutOfOrderness: 5 * time.Millisecond, IdleTimeout: 10 * time.Millisecond}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	a := NewSplits(3, cfg, at(0))
	_, err := a.Record(0, 100, at(0))
	must(err)
	_, err = a.Record(1, 50, at(1))
	must(err)
	_, err = a.Record(2, 70, at(4))
	must(err)
	_, err = a.Record(0, 200, at(9))
	must(err)
	_, err = a.Tick(at(12)) // split 1 idle (quiet 11 ms); 2 quiet 8 ms
	must(err)
	if got := a.Output(); got != 65 {
		t.Fatalf("output %d before the checkpoint, want 65 (split 2)", got)
	}
	restore := func(a *Splits) *Splits {
		b := NewSplits(a.Len(), cfg, at(1000)) // a later process
		for i := range a.Len() {
			must(b.Restore(SplitID(i), a.Mark(SplitID(i))))
		}
		b.RestoreOutput(a.Output())
		return b
	}
	b := restore(a)
	for i := range 3 {
		if got, want := b.State(SplitID(i)), a.State(SplitID(i)); got != want {
			t.Errorf("split %d restored as %+v, want %+v", i, got, want)
		}
	}
	if wm, moved := b.Emit(); wm != 65 || moved {
		t.Errorf("restored output %d (advanced %v), want 65, not advanced: it was emitted before", wm, moved)
	}
	// Split 2's clock goes on from 8 ms: idle 2 ms later, not 10.
	idled, err := b.Tick(at(1002))
	must(err)
	if len(idled) != 1 || idled[0] != 2 {
		t.Errorf("splits %v went idle 2 ms after the restore, want [2]", idled)
	}
	if got := b.Output(); got != 195 {
		t.Errorf("output %d once split 2 is idle, want 195 (split 0; 1 stays idle)", got)
	}

	// Split 1 back from idleness behind the output: the output stays.
	_, err = b.Record(1, 60, at(1003))
	must(err)
	if got := b.Output(); got != 195 {
		t.Fatalf("output %d, want 195", got)
	}
	c := restore(b)
	if got := c.Output(); got != 195 {
		t.Errorf("restored output %d, want 195: it went backwards", got)
	}
	if st := c.State(1); st.Idle || st.Watermark != 55 {
		t.Errorf("split 1 restored as %+v, want active at 55", st)
	}
	if err := c.Restore(5, SplitMark{}); err == nil {
		t.Error("restored a split that does not exist")
	}
}
