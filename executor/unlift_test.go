package executor

import (
	"sync"
	"testing"
	"time"
)

// TestUnliftSwitchDecide: the first bundle to report decides, once, for
// every subtask; too little input, a bundle that cannot run again, or
// keys that repeat keep the combine lifted.
func TestUnliftSwitchDecide(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, out  int64
		canRerun bool
		unlifted bool
	}{
		{"unique keys", 10000, 10000, true, true},
		{"mostly unique", 10000, 8001, true, true},
		{"at the line", 10000, 8000, true, false},
		{"repeating keys", 10000, 100, true, false},
		{"too little input", liftEvidence - 1, liftEvidence - 1, true, false},
		{"cannot run again", 10000, 10000, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sw UnliftSwitch
			if sw.Unlifted() {
				t.Fatal("undecided switch reports unlifted")
			}
			if got := sw.decide(tc.in, tc.out, tc.canRerun); got != tc.unlifted {
				t.Fatalf("decide(%d, %d, %v) = %v, want %v", tc.in, tc.out, tc.canRerun, got, tc.unlifted)
			}
			// Later reports, whatever they say, find it decided.
			for _, later := range [][2]int64{{10000, 10000}, {10000, 1}, {0, 0}} {
				if got := sw.decide(later[0], later[1], true); got != tc.unlifted {
					t.Errorf("decided %v, then decide(%d, %d) = %v", tc.unlifted, later[0], later[1], got)
				}
			}
			if sw.Unlifted() != tc.unlifted {
				t.Errorf("Unlifted() = %v, want %v", sw.Unlifted(), tc.unlifted)
			}
		})
	}
}

// TestUnliftSwitchConcurrent: subtasks deciding at once agree.
func TestUnliftSwitchConcurrent(t *testing.T) {
	var sw UnliftSwitch
	var wg sync.WaitGroup
	got := make([]bool, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := int64(10000) // half say unique keys, half repeating
			if i%2 == 1 {
				out = 10
			}
			got[i] = sw.decide(10000, out, true)
		}()
	}
	wg.Wait()
	for i, g := range got {
		if g != got[0] || g != sw.Unlifted() {
			t.Fatalf("subtask %d decided %v, subtask 0 %v, switch %v", i, g, got[0], sw.Unlifted())
		}
	}
}

// TestUndecidedProducerBundleWaits: a producer's open bundle does not close
// on MaxBundleTime while its combine is undecided, so that a slow source's
// first bundle is not cut too short to decide; the consumer's does.
func TestUndecidedProducerBundleWaits(t *testing.T) {
	sw := &UnliftSwitch{}
	open := func(us *UnliftSpec) *SDKStage {
		s := NewSDKStage(&SDKStageSpec{Name: "stage", Unlift: us, MaxBundleTime: time.Millisecond}, nil)
		s.pending, s.openedAt = [][]byte{{1}}, time.Now().Add(-time.Hour)
		return s
	}
	prod, cons := open(&UnliftSpec{Switch: sw, Producer: true}), open(&UnliftSpec{Switch: sw})
	if _, due := prod.bundleDue(); due {
		t.Error("undecided producer's bundle is due")
	}
	if _, due := cons.bundleDue(); !due {
		t.Error("consumer's bundle is not due")
	}
	sw.decide(10, 10, true) // too little input: lifted
	if _, due := prod.bundleDue(); !due {
		t.Error("decided producer's bundle is not due")
	}
}

// TestUnliftDecisionRestored: a checkpoint keeps how a combine was
// decided to run, and a restored job runs it so rather than deciding
// anew: its group-by-key's restored records are in the decided form. A
// checkpoint taken undecided says nothing; one that contradicts the
// switch is refused.
func TestUnliftDecisionRestored(t *testing.T) {
	for _, unlifted := range []bool{true, false} {
		var before UnliftSwitch
		in := int64(10000)
		out := in
		if !unlifted {
			out = 1
		}
		before.decide(in, out, true)
		a := NewSDKStage(&SDKStageSpec{Name: "consumer", Unlift: &UnliftSpec{Switch: &before}}, &Output{})
		snap, err := a.SnapshotState(1)
		if err != nil || snap == nil {
			t.Fatalf("snapshot %q, %v; want the decision", snap, err)
		}
		var after UnliftSwitch
		b := NewSDKStage(&SDKStageSpec{Name: "consumer", Unlift: &UnliftSpec{Switch: &after}}, &Output{})
		if err := b.RestoreState(snap); err != nil {
			t.Fatal(err)
		}
		if after.decision() != before.decision() || after.Unlifted() != unlifted {
			t.Errorf("restored decision %q, want %q", after.decision(), before.decision())
		}
		// Another subtask of the combine restores the same.
		if err := NewSDKStage(&SDKStageSpec{Name: "producer", Unlift: &UnliftSpec{Switch: &after, Producer: true}}, &Output{}).RestoreState(snap); err != nil {
			t.Errorf("a second subtask's restore: %v", err)
		}
		var other UnliftSwitch
		other.decide(in, in+1-out, true) // the other way
		if err := NewSDKStage(&SDKStageSpec{Name: "c", Unlift: &UnliftSpec{Switch: &other}}, &Output{}).RestoreState(snap); err == nil {
			t.Error("a switch decided the other way took the checkpoint's decision")
		}
	}
	var undecided UnliftSwitch
	if b, err := NewSDKStage(&SDKStageSpec{Name: "c", Unlift: &UnliftSpec{Switch: &undecided}}, &Output{}).SnapshotState(1); err != nil || b != nil {
		t.Errorf("an undecided combine snapshots %q, %v; want nothing", b, err)
	}
}
