package twophase

import (
	"context"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
)

// StableOperator is what StableInput wraps: an SDK stage, which acts on
// processing time and wakes for processing-time timers.
type StableOperator interface {
	executor.Operator
	executor.ProcessingTimer
	executor.Waker
}

// StableInput gives an operator only main input that a completed
// checkpoint covers: Beam's requires_stable_input. A ParDo that needs it
// (one with side effects that must not differ on replay) sees, after a
// restore, exactly the input it saw before the crash, because what it
// sees is in a checkpoint first.
//
// It is the two-phase-commit protocol with the operator as the external
// system: main-input elements wait in the store by epoch (so snapshots
// hold them), and CheckpointComplete(C) hands the epochs below C to the
// operator, in arrival order, then the main input watermark as it was at
// barrier C, and drops them from the store. On start over a restored
// store the epochs it holds are handed over at once: the checkpoint they
// are in completed. The main input watermark reaches the operator only
// with the data it covers, so the operator never sees an element behind
// its watermark; it runs one checkpoint interval behind its input. Side
// inputs, barriers, processing time and timers pass straight through.
//
// It forwards every optional capability of the operator it wraps
// (executor.Capabilities): its snapshot holds its own memory (the
// watermarks of sealed epochs) composed with the operator's
// (stable_snapshot.go), so a restored operator gets its timers, side
// inputs and waiting elements back, and the watermark of the checkpoint's
// barrier with the epochs it covers.
type StableInput struct {
	Inner   StableOperator
	Pending *Pending
	// Main is the main input's port.
	Main int

	started bool
	// restored says RestoreState set sealed and given.
	restored bool
	epoch    executor.BarrierID
	wm       mtime.Time   // the newest main input watermark received
	sealed   []sealedMark // watermark at each barrier, oldest first, not yet handed over
	given    mtime.Time   // the newest watermark handed to Inner
	batch    [][]byte     // reused for handing elements over
}

type sealedMark struct {
	id executor.BarrierID
	wm mtime.Time
}

// releaseBatch is how many elements are handed to Inner per Process call.
const releaseBatch = 256

func (s *StableInput) start(ctx context.Context) error {
	if s.started {
		return nil
	}
	sealed, err := s.Pending.Sealed()
	if err != nil {
		return err
	}
	s.started, s.epoch, s.wm = true, sealed, mtime.MinTimestamp
	if !s.restored {
		s.given = mtime.MinTimestamp
	}
	return s.release(ctx, sealed)
}

// Process implements executor.Operator.
func (s *StableInput) Process(ctx context.Context, port int, elems [][]byte) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	if port != s.Main {
		return s.Inner.Process(ctx, port, elems)
	}
	// What waits in the store must outlive the process: a held group's
	// token does not, so the group is inlined, and its claim given up.
	elems, err := s.Detach(port, elems, true)
	if err != nil {
		return err
	}
	return s.Pending.Append(s.epoch, elems)
}

// Detach implements executor.Detacher through Inner.
func (s *StableInput) Detach(port int, elems [][]byte, release bool) ([][]byte, error) {
	if d, ok := s.Inner.(executor.Detacher); ok {
		return d.Detach(port, elems, release)
	}
	return elems, nil
}

// Watermark implements executor.Operator: a main input watermark waits
// for the data it covers.
func (s *StableInput) Watermark(ctx context.Context, port int, wm mtime.Time) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	if port != s.Main {
		return s.Inner.Watermark(ctx, port, wm)
	}
	s.wm = wm
	return nil
}

// Barrier implements executor.Operator: it seals the epoch, then lets
// Inner snapshot.
func (s *StableInput) Barrier(ctx context.Context, id executor.BarrierID) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	if id > s.epoch {
		s.epoch = id
		if err := s.Pending.Seal(id); err != nil {
			return err
		}
		s.sealed = append(s.sealed, sealedMark{id, s.wm})
	}
	return s.Inner.Barrier(ctx, id)
}

// CheckpointComplete implements executor.CheckpointListener.
func (s *StableInput) CheckpointComplete(ctx context.Context, id executor.BarrierID) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	if err := s.release(ctx, id); err != nil {
		return err
	}
	if l, ok := s.Inner.(executor.CheckpointListener); ok {
		return l.CheckpointComplete(ctx, id)
	}
	return nil
}

// Finish implements executor.Operator: the input ended, so all of it is
// final; Inner gets the rest, then the last watermark, then finishes.
func (s *StableInput) Finish(ctx context.Context) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	s.sealed = append(s.sealed, sealedMark{s.epoch + 1, s.wm})
	if err := s.release(ctx, s.epoch+1); err != nil {
		return err
	}
	return s.Inner.Finish(ctx)
}

// release hands the epochs below bound to Inner, then the watermark of the
// newest barrier at or below bound, and drops the epochs from the store.
func (s *StableInput) release(ctx context.Context, bound executor.BarrierID) error {
	s.batch = s.batch[:0]
	flush := func() error {
		if len(s.batch) == 0 {
			return nil
		}
		err := s.Inner.Process(ctx, s.Main, s.batch)
		s.batch = s.batch[:0]
		return err
	}
	err := s.Pending.Read(0, bound, func(_ executor.BarrierID, v []byte) error {
		s.batch = append(s.batch, append([]byte(nil), v...))
		if len(s.batch) == releaseBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	if err := s.Pending.Delete(bound); err != nil {
		return err
	}
	wm, ok := mtime.MinTimestamp, false
	for len(s.sealed) > 0 && s.sealed[0].id <= bound {
		wm, ok = s.sealed[0].wm, true
		s.sealed = s.sealed[1:]
	}
	if ok && wm > s.given {
		s.given = wm
		return s.Inner.Watermark(ctx, s.Main, wm)
	}
	return nil
}

// ProcessingTime implements executor.ProcessingTimer.
func (s *StableInput) ProcessingTime(ctx context.Context, t mtime.Time) error {
	return s.Inner.ProcessingTime(ctx, t)
}

// NextWake implements executor.Waker.
func (s *StableInput) NextWake() (time.Time, bool) { return s.Inner.NextWake() }

// Wake implements executor.Waker.
func (s *StableInput) Wake(ctx context.Context, now time.Time) error { return s.Inner.Wake(ctx, now) }
