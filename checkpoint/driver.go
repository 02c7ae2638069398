package checkpoint

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Clock is the time a Driver runs on; tests pass a fake one.
type Clock interface {
	Now() time.Time
	// After sends the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

// Now implements Clock.
func (RealClock) Now() time.Time { return time.Now() }

// After implements Clock.
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// DriverConfig wires a Driver to its job.
type DriverConfig struct {
	Coordinator *Coordinator
	Clock       Clock
	// Trigger injects checkpoint id's barriers at the sources. It must
	// return once ctx is done.
	Trigger func(ctx context.Context, id ID) error
	// Store makes checkpoint id, which every subtask acknowledged, durable
	// and visible; an error fails the checkpoint, not the job.
	Store func(ctx context.Context, stats Stats) error
	// Abort, if set, drops what was written of a failed checkpoint.
	Abort func(id ID)
	// Finished, if set, hears of each checkpoint that completed or failed.
	Finished func(Stats)
}

// Driver runs a Coordinator: it triggers on the clock, takes
// acknowledgements from any goroutine, and stores ready checkpoints on its
// own goroutine (Run), so a slow disk never stops a subtask.
type Driver struct {
	cfg   DriverConfig
	mu    sync.Mutex // guards cfg.Coordinator
	ready chan ID
	errc  chan error    // a failure from Ack or Decline that fails the job
	wake  chan struct{} // a savepoint was requested: Next moved earlier
	// waiters are the savepoint requests not yet answered (under mu).
	waiters []savepointWaiter
	ended   bool // Run returned; no savepoint will be taken (under mu)
}

// savepointWaiter is one RequestSavepoint: it is answered by the first
// savepoint triggered at or after it was made.
type savepointWaiter struct {
	at time.Time
	ch chan Stats
}

// NewDriver returns a driver; Run starts it.
func NewDriver(cfg DriverConfig) *Driver {
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	return &Driver{cfg: cfg, ready: make(chan ID, 1), errc: make(chan error, 1), wake: make(chan struct{}, 1)}
}

// ErrDriverStopped is the reason of a savepoint that was never taken
// because the job's checkpoints stopped (the job ended) first.
const ErrDriverStopped = "the job's checkpoints stopped before the savepoint was taken"

// RequestSavepoint asks for a savepoint (Coordinator.RequestSavepoint) and
// returns a channel that receives its statistics once it completed or
// failed; safe from any goroutine. If the job's checkpoints stop first,
// the channel receives a failed Stats whose Reason is ErrDriverStopped.
func (d *Driver) RequestSavepoint() <-chan Stats {
	ch := make(chan Stats, 1)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		ch <- Stats{Status: Failed, Savepoint: true, Reason: ErrDriverStopped}
		return ch
	}
	now := d.cfg.Clock.Now()
	d.cfg.Coordinator.RequestSavepoint(now)
	d.waiters = append(d.waiters, savepointWaiter{at: now, ch: ch})
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return ch
}

// answer gives st, a savepoint that ended, to the requests it answers.
// Called with d.mu held.
func (d *Driver) answer(st Stats) {
	rest := d.waiters[:0]
	for _, w := range d.waiters {
		if st.Trigger.Before(w.at) {
			rest = append(rest, w) // asked after this one started
			continue
		}
		w.ch <- st
	}
	d.waiters = rest
}

// stopWaiters fails the requests no savepoint will answer now.
func (d *Driver) stopWaiters() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended = true
	for _, w := range d.waiters {
		w.ch <- Stats{Status: Failed, Savepoint: true, Reason: ErrDriverStopped}
	}
	d.waiters = nil
}

// Run drives checkpoints until ctx is done, or returns the error that
// fails the job (too many failed checkpoints). The caller owns the
// goroutine that calls it and stops it through ctx.
func (d *Driver) Run(ctx context.Context) error {
	defer d.stopWaiters()
	for {
		var wait time.Duration
		d.locked(func() { wait = d.cfg.Coordinator.Next().Sub(d.cfg.Clock.Now()) })
		select {
		case <-ctx.Done():
			return nil
		case err := <-d.errc:
			return err
		case id := <-d.ready:
			if err := d.store(ctx, id); err != nil {
				return err
			}
		case <-d.wake:
			// Next moved earlier; wait again.
		case <-d.cfg.Clock.After(wait):
			if err := d.tick(ctx); err != nil {
				return err
			}
		}
	}
}

func (d *Driver) tick(ctx context.Context) error {
	var id ID
	var ok bool
	var err error
	d.locked(func() {
		c := d.cfg.Coordinator
		before, _ := c.Pending()
		id, ok, err = c.Tick(d.cfg.Clock.Now())
		// Tick may have expired the pending checkpoint.
		if before.ID != 0 {
			if p, still := c.Pending(); !still || p.ID != before.ID {
				d.finished(before.ID)
			}
		}
	})
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	if err := d.cfg.Trigger(ctx, id); err != nil && ctx.Err() == nil {
		return fmt.Errorf("checkpoint %d: inject barriers: %w", id, err)
	}
	return nil
}

// finished reports the last checkpoint in the history, which just ended.
// Called with d.mu held.
func (d *Driver) finished(id ID) {
	h := d.cfg.Coordinator.History()
	if len(h) == 0 || h[len(h)-1].ID != id {
		return
	}
	st := h[len(h)-1]
	if st.Status == Failed && d.cfg.Abort != nil {
		d.cfg.Abort(id)
	}
	if d.cfg.Finished != nil {
		d.cfg.Finished(st)
	}
	if st.Savepoint {
		d.answer(st)
	}
}

func (d *Driver) store(ctx context.Context, id ID) error {
	var st Stats
	var ok bool
	d.locked(func() { st, ok = d.cfg.Coordinator.Pending() })
	if !ok || st.ID != id {
		return nil
	}
	err := d.cfg.Store(ctx, st)
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Clock.Now()
	if err != nil {
		err = d.cfg.Coordinator.Fail(now, id, fmt.Errorf("store: %w", err))
		d.finished(id)
		return err
	}
	if _, err := d.cfg.Coordinator.Complete(now, id); err != nil {
		return err
	}
	d.finished(id)
	return nil
}

// Ack records a subtask's acknowledgement; safe from any goroutine. It
// never blocks on the driver.
func (d *Driver) Ack(a Ack) {
	var ready bool
	var err error
	d.locked(func() { ready, err = d.cfg.Coordinator.Ack(d.cfg.Clock.Now(), a) })
	if err != nil {
		d.report(err)
		return
	}
	if ready {
		// Only one checkpoint is in flight, so the buffer of one is room
		// enough.
		select {
		case d.ready <- a.ID:
		default:
		}
	}
}

// Finished reports a subtask that ended; safe from any goroutine.
func (d *Driver) Finished(t Task) {
	var p Stats
	var ready bool
	d.locked(func() {
		c := d.cfg.Coordinator
		var pending bool
		p, pending = c.Pending()
		ready = c.Finished(d.cfg.Clock.Now(), t)
		if _, still := c.Pending(); pending && !still {
			d.finished(p.ID)
		}
	})
	if ready {
		select {
		case d.ready <- p.ID:
		default:
		}
	}
}

// Abandon fails checkpoint id for a reason of the job's own (its storage
// could not be prepared); safe from any goroutine.
func (d *Driver) Abandon(id ID, reason error) {
	var err error
	d.locked(func() {
		if p, ok := d.cfg.Coordinator.Pending(); ok && p.ID == id {
			err = d.cfg.Coordinator.Fail(d.cfg.Clock.Now(), id, reason)
			d.finished(id)
		}
	})
	if err != nil {
		d.report(err)
	}
}

// Decline fails checkpoint id because a subtask could not snapshot it.
func (d *Driver) Decline(t Task, id ID, reason error) {
	var err error
	d.locked(func() {
		if p, ok := d.cfg.Coordinator.Pending(); ok && p.ID == id {
			err = d.cfg.Coordinator.Fail(d.cfg.Clock.Now(), id, fmt.Errorf("%v declined: %w", t, reason))
			d.finished(id)
		}
	})
	if err != nil {
		d.report(err)
	}
}

// locked runs f with d.mu held, and releases it even if f panics: a
// panic in the job's callbacks (Finished, Abort) is recovered by the
// goroutine that called in (package contain), and the job's other
// goroutines must then still get the lock to stop.
func (d *Driver) locked(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f()
}

func (d *Driver) report(err error) {
	select {
	case d.errc <- err:
	default: // one error is enough to fail the job
	}
}

// SwitchAt is Coordinator.SwitchAt; safe from any goroutine.
func (d *Driver) SwitchAt(id ID) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.Coordinator.SwitchAt(id)
}

// Stats returns the finished checkpoints kept and the pending one, if any.
func (d *Driver) Stats() (history []Stats, pending *Stats, completed, failed int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cfg.Coordinator
	if p, ok := c.Pending(); ok {
		pending = &p
	}
	completed, failed = c.Counts()
	return c.History(), pending, completed, failed
}
