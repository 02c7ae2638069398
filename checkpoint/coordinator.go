package checkpoint

import (
	"errors"
	"fmt"
	"time"
)

// Mode says how subtasks align a checkpoint's barriers.
type Mode int

// Modes.
const (
	// Aligned: a subtask holds back each channel that delivered the
	// barrier until every channel has, then snapshots. Snapshots hold no
	// in-flight data, but under backpressure alignment waits for the
	// slowest channel.
	Aligned Mode = iota
	// Unaligned: the first barrier is forwarded at once and the data it
	// overtook is stored with the snapshot.
	Unaligned
	// AlignedTimeout starts aligned and switches to unaligned once
	// AlignedTimeout has passed since the trigger.
	AlignedTimeout
)

func (m Mode) String() string {
	switch m {
	case Aligned:
		return "aligned"
	case Unaligned:
		return "unaligned"
	case AlignedTimeout:
		return "aligned-timeout"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// ParseMode reads a mode as String writes it.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Aligned, Unaligned, AlignedTimeout} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("checkpoint: unknown mode %q (want aligned, unaligned or aligned-timeout)", s)
}

// Options configure a Coordinator.
type Options struct {
	// Interval is from one trigger to the next. Required.
	Interval time.Duration
	// Timeout expires a checkpoint that has not completed in time; default
	// 10 minutes, as Flink's.
	Timeout time.Duration
	// MinPause is the least time from the end of one checkpoint to the
	// trigger of the next, so a job whose checkpoints take about an
	// interval still makes progress between them; default 0.
	MinPause time.Duration
	// TolerableFailures is how many checkpoints in a row may fail (expire,
	// be declined, fail to store) before the job fails; default 0, as
	// Flink's: the first failure fails the job.
	TolerableFailures int
	// Mode and, for AlignedTimeout, AlignedTimeout (> 0).
	Mode           Mode
	AlignedTimeout time.Duration
	// History is how many finished checkpoints Stats keeps; default 10.
	History int
	// FirstID is the first checkpoint's id; default 1. A job that finds
	// checkpoints of an earlier run in its folder continues their numbers,
	// so ids stay unique in the folder.
	FirstID ID
}

// DefaultTimeout is the default of Options.Timeout.
const DefaultTimeout = 10 * time.Minute

func (o *Options) ensureDefaults() {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.History <= 0 {
		o.History = 10
	}
}

func (o *Options) validate() error {
	switch {
	case o.Interval <= 0:
		return fmt.Errorf("checkpoint: interval %v is not positive", o.Interval)
	case o.TolerableFailures < 0:
		return fmt.Errorf("checkpoint: tolerable failures %d is negative", o.TolerableFailures)
	case o.MinPause < 0:
		return fmt.Errorf("checkpoint: min pause %v is negative", o.MinPause)
	case o.Mode == AlignedTimeout && o.AlignedTimeout <= 0:
		return fmt.Errorf("checkpoint: mode aligned-timeout needs a positive aligned timeout, not %v", o.AlignedTimeout)
	case o.Mode < Aligned || o.Mode > AlignedTimeout:
		return fmt.Errorf("checkpoint: unknown %v", o.Mode)
	}
	return nil
}

// ErrTooManyFailures is wrapped by the error that fails the job once more
// checkpoints in a row failed than it tolerates.
var ErrTooManyFailures = errors.New("checkpoint: too many consecutive checkpoint failures")

// Coordinator decides when checkpoints start, end and fail. It is not safe
// for concurrent use; a Driver serialises calls.
type Coordinator struct {
	opts     Options
	tasks    map[Task]bool
	next     ID
	pending  *Stats
	acked    map[Task]bool
	ready    bool // every subtask acknowledged pending; it is being stored
	nextAt   time.Time
	failures int // consecutive
	failed   error
	// savepoint says the next checkpoint is a savepoint, due at once.
	savepoint bool
	history   []Stats
	done      struct{ completed, failed int }
}

// NewCoordinator returns the coordinator of a job whose subtasks are tasks,
// started at now: the first checkpoint triggers one interval later.
func NewCoordinator(opts Options, tasks []Task, now time.Time) (*Coordinator, error) {
	opts.ensureDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		return nil, errors.New("checkpoint: no subtasks to acknowledge")
	}
	c := &Coordinator{opts: opts, tasks: map[Task]bool{}, next: max(opts.FirstID, 1), nextAt: now.Add(opts.Interval)}
	for _, t := range tasks {
		if c.tasks[t] {
			return nil, fmt.Errorf("checkpoint: subtask %v listed twice", t)
		}
		c.tasks[t] = true
	}
	return c, nil
}

// Next is when Tick next has something to do: the pending checkpoint's
// expiry, or the next trigger.
func (c *Coordinator) Next() time.Time {
	if c.pending != nil {
		return c.pending.Trigger.Add(c.opts.Timeout)
	}
	return c.nextAt
}

// Tick expires the pending checkpoint if its timeout passed, and triggers
// the next one if it is due and none is pending. It returns the id of a
// checkpoint it triggered; the caller injects its barriers. An error means
// the job fails.
func (c *Coordinator) Tick(now time.Time) (id ID, triggered bool, err error) {
	if c.failed != nil {
		return 0, false, c.failed
	}
	if p := c.pending; p != nil && !c.ready && !now.Before(p.Trigger.Add(c.opts.Timeout)) {
		reason := fmt.Errorf("expired after %v with %d of %d subtasks acknowledged", c.opts.Timeout, len(p.Subtasks), p.Total)
		if err := c.Fail(now, p.ID, reason); err != nil {
			return 0, false, err
		}
	}
	if c.pending != nil || now.Before(c.nextAt) || len(c.tasks) == 0 {
		return 0, false, nil
	}
	id = c.next
	c.next++
	c.pending = &Stats{ID: id, Trigger: now, Total: len(c.tasks), Savepoint: c.savepoint}
	c.savepoint = false
	c.acked = map[Task]bool{}
	c.ready = false
	// The interval runs from trigger to trigger; a checkpoint that outlasts
	// it delays the next until it ends (see finish).
	c.nextAt = now.Add(c.opts.Interval)
	return id, true, nil
}

// SwitchAt says when a subtask still aligning checkpoint id stops waiting
// and goes unaligned: never (ok false) in Aligned mode, at once (the
// trigger instant, which every arrival follows) in Unaligned mode, and
// AlignedTimeout after the trigger in AlignedTimeout mode.
//
// The timeout counts from the trigger, not from the subtask's first
// barrier, as Flink's aligned-checkpoint-timeout does: what it bounds is the
// barrier's lateness end to end, so a barrier that queued long upstream
// arrives already switched instead of aligning downstream for the whole
// timeout again at every stage.
func (c *Coordinator) SwitchAt(id ID) (at time.Time, ok bool) {
	p := c.pending
	if p == nil || p.ID != id {
		// Not pending (expired, or unknown): aligning costs nothing more,
		// its acknowledgement will be dropped anyway.
		return time.Time{}, false
	}
	if p.Savepoint {
		return time.Time{}, false
	}
	return SwitchAt(c.opts.Mode, c.opts.AlignedTimeout, p.Trigger)
}

// RequestSavepoint makes the next checkpoint a savepoint and due at once:
// it triggers on the next Tick, or as soon as the checkpoint in flight
// ends. A savepoint is always aligned, so it holds no in-flight data and
// restores into a changed graph (Flink's savepoints are aligned for the
// same reason), and its failure is not one of the failures in a row the
// job tolerates: the user asked for it and hears of its failure.
func (c *Coordinator) RequestSavepoint(now time.Time) {
	c.savepoint = true
	if now.Before(c.nextAt) {
		c.nextAt = now
	}
}

// SwitchAt is Coordinator.SwitchAt for a checkpoint triggered at trigger.
func SwitchAt(m Mode, alignedTimeout time.Duration, trigger time.Time) (time.Time, bool) {
	switch m {
	case Unaligned:
		return trigger, true
	case AlignedTimeout:
		return trigger.Add(alignedTimeout), true
	}
	return time.Time{}, false
}

// Ack records a subtask's acknowledgement. It reports ready once every
// subtask has acknowledged: the caller then stores the checkpoint and calls
// Complete or Fail. Acknowledgements of checkpoints no longer pending
// (expired or failed) are dropped: they arrive late by design, not by
// error.
func (c *Coordinator) Ack(now time.Time, a Ack) (ready bool, err error) {
	p := c.pending
	if p == nil || a.ID != p.ID {
		if a.ID >= c.next {
			return false, fmt.Errorf("checkpoint: %v acknowledged checkpoint %d, which was never triggered", a.Task, a.ID)
		}
		return false, nil
	}
	if !c.tasks[a.Task] {
		return false, fmt.Errorf("checkpoint: unknown subtask %v acknowledged checkpoint %d", a.Task, a.ID)
	}
	if c.acked[a.Task] {
		return false, fmt.Errorf("checkpoint: %v acknowledged checkpoint %d twice", a.Task, a.ID)
	}
	c.acked[a.Task] = true
	delay := a.Arrival.Sub(p.Trigger)
	if a.Arrival.IsZero() || delay < 0 {
		delay = 0
	}
	p.Subtasks = append(p.Subtasks, SubtaskStats{Ack: a, StartDelay: delay, Acked: now})
	if len(p.Subtasks) == p.Total {
		c.ready = true
		return true, nil
	}
	return false, nil
}

// Finished removes a subtask that ended: no later checkpoint waits for it,
// and the pending one no longer does unless it already acknowledged (an
// ended subtask has emitted all it had). It reports ready as Ack does. When
// every subtask ended without acknowledging the pending checkpoint, there
// is nothing to store: it ends failed, without counting as a failure.
func (c *Coordinator) Finished(now time.Time, t Task) (ready bool) {
	if !c.tasks[t] {
		return false
	}
	delete(c.tasks, t)
	p := c.pending
	if p == nil || c.acked[t] || c.ready {
		return false
	}
	p.Total--
	switch {
	case p.Total == 0:
		p.Status, p.Reason = Failed, "every subtask ended before it acknowledged"
		c.finish(now)
	case len(p.Subtasks) == p.Total:
		c.ready = true
		return true
	}
	return false
}

// Complete ends checkpoint id, stored, as completed, and returns its
// statistics.
func (c *Coordinator) Complete(now time.Time, id ID) (Stats, error) {
	p := c.pending
	if p == nil || p.ID != id {
		return Stats{}, fmt.Errorf("checkpoint: complete %d, which is not pending", id)
	}
	if !c.ready {
		return Stats{}, fmt.Errorf("checkpoint: complete %d with %d of %d subtasks acknowledged", id, len(p.Subtasks), p.Total)
	}
	p.Status = Completed
	c.failures = 0
	c.done.completed++
	return c.finish(now), nil
}

// Fail ends checkpoint id as failed, for reason. It returns an error
// wrapping ErrTooManyFailures once more checkpoints in a row failed than
// the job tolerates; the job then fails with it.
func (c *Coordinator) Fail(now time.Time, id ID, reason error) error {
	p := c.pending
	if p == nil || p.ID != id {
		return nil // already ended; a second report of one failure
	}
	p.Status = Failed
	p.Reason = reason.Error()
	if !p.Savepoint {
		c.failures++
	}
	c.done.failed++
	c.finish(now)
	if c.failures > c.opts.TolerableFailures {
		c.failed = fmt.Errorf("%w: %d in a row, %d tolerated; the last, checkpoint %d: %w",
			ErrTooManyFailures, c.failures, c.opts.TolerableFailures, id, reason)
		return c.failed
	}
	return nil
}

func (c *Coordinator) finish(now time.Time) Stats {
	p := c.pending
	p.End = now
	c.pending, c.acked, c.ready = nil, nil, false
	if at := now.Add(c.opts.MinPause); at.After(c.nextAt) {
		c.nextAt = at
	}
	c.history = append(c.history, *p)
	if len(c.history) > c.opts.History {
		c.history = c.history[len(c.history)-c.opts.History:]
	}
	return *p
}

// Pending returns the checkpoint in flight, if any.
func (c *Coordinator) Pending() (Stats, bool) {
	if c.pending == nil {
		return Stats{}, false
	}
	s := *c.pending
	s.Subtasks = append([]SubtaskStats(nil), s.Subtasks...)
	return s, true
}

// History returns the last finished checkpoints, oldest first.
func (c *Coordinator) History() []Stats {
	return append([]Stats(nil), c.history...)
}

// Counts returns how many checkpoints completed and failed so far.
func (c *Coordinator) Counts() (completed, failed int) {
	return c.done.completed, c.done.failed
}
