package twophase

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/twophase/twophasetest"
)

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{{0, 100 * time.Millisecond}, {1, 200 * time.Millisecond}, {6, 6400 * time.Millisecond}, {7, 10 * time.Second}, {1000, 10 * time.Second}} {
		if got := Backoff(tc.attempt); got != tc.want {
			t.Errorf("Backoff(%d) = %v, want %v", tc.attempt, got, tc.want)
		}
	}
}

func TestRetry(t *testing.T) {
	ctx := context.Background()
	var retried []string
	calls := 0
	err := Retry(ctx, "commit 3", func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("broker down")
		}
		return nil
	}, func(err error) { retried = append(retried, err.Error()) })
	if err != nil || calls != 3 || len(retried) != 2 || retried[0] != "commit 3: broker down (retrying)" {
		t.Errorf("transient: err %v after %d calls, retried %q", err, calls, retried)
	}
	calls = 0
	err = Retry(ctx, "commit 4", func(context.Context) error { calls++; return Permanent(errors.New("fenced")) }, nil)
	if err == nil || err.Error() != "commit 4: fenced" || calls != 1 || !IsPermanent(err) {
		t.Errorf("permanent: err %v after %d calls", err, calls)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := Retry(cctx, "commit 5", func(context.Context) error { return errors.New("down") }, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v", err)
	}
}

func read(t *testing.T, p *Pending, lo, hi executor.BarrierID) []string {
	t.Helper()
	var out []string
	if err := p.Read(lo, hi, func(e executor.BarrierID, v []byte) error {
		out = append(out, fmt.Sprintf("%d:%s", e, v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPendingSurvivesRestore: epochs and the sealed barrier are in the
// sink's namespace, so a checkpoint's export carries them to a restored
// store; what was written after the checkpoint is not there.
func TestPendingSurvivesRestore(t *testing.T) {
	store := twophasetest.Store(t)
	p := NewPending(store, "sink/0", "s")
	other := NewPending(store, "sink/1", "s") // another subtask: not exported with sink/0
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	run, err := p.Lineage()
	must(err)
	must(p.Append(0, [][]byte{[]byte("a"), []byte("b")}))
	must(other.Append(0, [][]byte{[]byte("x")}))
	must(p.Seal(2))
	must(p.Append(2, [][]byte{[]byte("c")}))
	must(p.Seal(3))
	restore := twophasetest.Checkpoint(t, store, "sink/0")
	must(p.Append(3, [][]byte{[]byte("after")}))
	must(p.Seal(4))

	if got, want := read(t, p, 0, 10), []string{"0:a", "0:b", "2:c", "3:after"}; !slices.Equal(got, want) {
		t.Errorf("live: %v, want %v", got, want)
	}
	r := NewPending(restore(), "sink/0", "s")
	if got, want := read(t, r, 0, 10), []string{"0:a", "0:b", "2:c"}; !slices.Equal(got, want) {
		t.Errorf("restored: %v, want %v", got, want)
	}
	if b, err := r.Sealed(); err != nil || b != 3 {
		t.Errorf("restored Sealed() = %d, %v; want 3", b, err)
	}
	if got, err := r.Lineage(); err != nil || got != run || len(run) != 16 {
		t.Errorf("restored Lineage() = %q, %v; want %q", got, err, run)
	}
	if fresh, _ := NewPending(twophasetest.Store(t), "sink/0", "s").Lineage(); fresh == run {
		t.Errorf("a fresh store has the lineage token %q of another", fresh)
	}
	must(r.Delete(2))
	if got, want := read(t, r, 0, 10), []string{"2:c"}; !slices.Equal(got, want) {
		t.Errorf("after Delete(2): %v, want %v", got, want)
	}
	if b, err := NewPending(twophasetest.Store(t), "sink/0", "s").Sealed(); err != nil || b != 0 {
		t.Errorf("fresh Sealed() = %d, %v; want 0", b, err)
	}
}
