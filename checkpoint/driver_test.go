package checkpoint

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeClock moves only when the test advances it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	added   chan struct{} // a waiter was added
}

type waiter struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, added: make(chan struct{}, 100)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(chan time.Time, 1)
	if d <= 0 {
		c <- f.now
		return c
	}
	f.waiters = append(f.waiters, waiter{f.now.Add(d), c})
	select {
	case f.added <- struct{}{}:
	default:
	}
	return c
}

// Advance moves the clock and fires the waiters due.
func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if w.at.After(f.now) {
			kept = append(kept, w)
			continue
		}
		w.c <- f.now
	}
	f.waiters = kept
}

// waitIdle waits until the driver waits on the clock again.
func (f *fakeClock) waitIdle() { <-f.added }

type driverRun struct {
	d        *Driver
	clock    *fakeClock
	triggers chan ID
	finished chan Stats
	errc     chan error
	cancel   context.CancelFunc
}

func startDriver(t *testing.T, opts Options, store func(Stats) error) *driverRun {
	t.Helper()
	clock := newFakeClock(t0)
	c, err := NewCoordinator(opts, twoTasks, t0)
	if err != nil {
		t.Fatal(err)
	}
	r := &driverRun{clock: clock, triggers: make(chan ID, 10), finished: make(chan Stats, 10), errc: make(chan error, 1)}
	r.d = NewDriver(DriverConfig{Coordinator: c, Clock: clock,
		Trigger:  func(_ context.Context, id ID) error { r.triggers <- id; return nil },
		Store:    func(_ context.Context, st Stats) error { return store(st) },
		Finished: func(st Stats) { r.finished <- st },
	})
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.errc <- r.d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-r.errc })
	clock.waitIdle()
	return r
}

func TestDriverCompletes(t *testing.T) {
	r := startDriver(t, Options{Interval: 10 * time.Second}, func(Stats) error { return nil })
	for want := ID(1); want <= 3; want++ {
		r.clock.Advance(10 * time.Second)
		if id := <-r.triggers; id != want {
			t.Fatalf("triggered %d, want %d", id, want)
		}
		r.clock.waitIdle()
		r.clock.Advance(time.Second)
		r.d.Ack(Ack{Task: twoTasks[0], ID: want, Arrival: r.clock.Now()})
		r.d.Ack(Ack{Task: twoTasks[1], ID: want, Arrival: r.clock.Now()})
		st := <-r.finished
		if st.ID != want || st.Status != Completed || st.Duration(time.Time{}) != time.Second {
			t.Fatalf("finished %+v, want %d completed after 1s", st, want)
		}
		r.clock.waitIdle()
		r.clock.Advance(-time.Second) // back onto the 10s grid
	}
	hist, pending, done, failed := r.d.Stats()
	if len(hist) != 3 || pending != nil || done != 3 || failed != 0 {
		t.Errorf("Stats = %d kept, pending %v, %d done, %d failed", len(hist), pending, done, failed)
	}
}

func TestDriverFailsJobAfterTolerableFailures(t *testing.T) {
	full := errors.New("no space left on device")
	r := startDriver(t, Options{Interval: 10 * time.Second, Timeout: 5 * time.Second, TolerableFailures: 1},
		func(Stats) error { return full })
	// Checkpoint 1 expires: tolerated.
	r.clock.Advance(10 * time.Second)
	<-r.triggers
	r.clock.waitIdle()
	r.clock.Advance(5 * time.Second)
	if st := <-r.finished; st.Status != Failed || st.ID != 1 {
		t.Fatalf("finished %+v, want 1 failed", st)
	}
	r.clock.waitIdle()
	// Checkpoint 2 cannot be stored: the second in a row fails the job.
	r.clock.Advance(5 * time.Second)
	<-r.triggers
	r.d.Ack(Ack{Task: twoTasks[0], ID: 2})
	r.d.Ack(Ack{Task: twoTasks[1], ID: 2})
	if st := <-r.finished; st.Status != Failed || st.ID != 2 {
		t.Fatalf("finished %+v, want 2 failed", st)
	}
	err := <-r.errc
	r.errc <- nil // for the cleanup
	if !errors.Is(err, ErrTooManyFailures) || !errors.Is(err, full) {
		t.Fatalf("Run = %v, want too many failures naming the disk", err)
	}
}

func TestDriverDecline(t *testing.T) {
	r := startDriver(t, Options{Interval: 10 * time.Second, TolerableFailures: 5}, func(Stats) error { return nil })
	r.clock.Advance(10 * time.Second)
	<-r.triggers
	r.d.Decline(twoTasks[1], 1, errors.New("export failed"))
	st := <-r.finished
	if st.Status != Failed || st.Reason != "{1 0} declined: export failed" {
		t.Fatalf("finished %+v, want a declined failure", st)
	}
	r.d.Decline(twoTasks[0], 1, errors.New("again")) // no second report
	select {
	case st := <-r.finished:
		t.Fatalf("a second decline reported %+v", st)
	default:
	}
}

// TestDriverTriggersOnScheduleAfterAFailure: a checkpoint declined (a full
// disk) or abandoned before its timeout lets the next one trigger at the
// interval. The driver used to wait for the failed one's timeout (ten
// minutes by default), so a job that tolerates failures went that long
// without checkpoints after each one.
func TestDriverTriggersOnScheduleAfterAFailure(t *testing.T) {
	r := startDriver(t, Options{Interval: 10 * time.Second, TolerableFailures: 5}, func(Stats) error { return nil })
	fail := []func(ID){
		func(id ID) { r.d.Decline(twoTasks[0], id, errors.New("no space left on device")) },
		func(id ID) { r.d.Abandon(id, errors.New("no space left on device")) },
	}
	for i, f := range fail {
		want := ID(i + 1)
		r.clock.Advance(10 * time.Second)
		if id := <-r.triggers; id != want {
			t.Fatalf("triggered %d, want %d", id, want)
		}
		r.clock.waitIdle() // waiting for the timeout
		r.clock.Advance(time.Second)
		f(want)
		if st := <-r.finished; st.Status != Failed || st.ID != want {
			t.Fatalf("finished %+v, want %d failed", st, want)
		}
		r.clock.waitIdle()            // waiting again, for the next trigger (a hang here is the bug)
		r.clock.Advance(-time.Second) // back onto the 10s grid
	}
	r.clock.Advance(10 * time.Second)
	if id := <-r.triggers; id != 3 {
		t.Fatalf("triggered %d, want 3", id)
	}
}
