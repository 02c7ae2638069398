package checkpoint

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDriverLockSurvivesACallbackPanic: the job's Finished callback
// panics while the driver holds its lock. The goroutine that called in
// recovers (as a subtask's does, package contain); the lock must be free
// afterwards, or every other goroutine of the job that reports to the
// driver would block for ever and the job would hang instead of failing.
func TestDriverLockSurvivesACallbackPanic(t *testing.T) {
	clock := newFakeClock(t0)
	c, err := NewCoordinator(Options{Interval: 10 * time.Second, TolerableFailures: 5}, twoTasks, t0)
	if err != nil {
		t.Fatal(err)
	}
	triggers := make(chan ID, 1)
	d := NewDriver(DriverConfig{Coordinator: c, Clock: clock,
		Trigger:  func(_ context.Context, id ID) error { triggers <- id; return nil },
		Store:    func(context.Context, Stats) error { return nil },
		Finished: func(Stats) { panic("finished boom") }})
	clock.Advance(10 * time.Second)
	if err := d.tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	id := <-triggers
	recovered := func() (r any) {
		defer func() { r = recover() }()
		d.Decline(twoTasks[0], id, errors.New("export failed"))
		return nil
	}()
	if recovered != "finished boom" {
		t.Fatalf("Decline recovered %v, want the callback's panic", recovered)
	}
	d.Ack(Ack{Task: twoTasks[1], ID: id}) // blocks for ever if the lock is held
	if _, pending, _, failed := d.Stats(); pending != nil || failed != 1 {
		t.Errorf("Stats: pending %v, %d failed; want the declined checkpoint failed", pending, failed)
	}
}
