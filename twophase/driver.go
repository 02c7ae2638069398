package twophase

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
)

// Driver is the executor operator of an exactly-once sink subtask: it owns
// the two-phase-commit lifecycle and calls its Sink to move the data. It
// implements executor.Operator and executor.CheckpointListener.
//
// On its first call it recovers (Pending.Sealed says which checkpoint the
// store is, 0 when fresh): it opens the sink under a new run token, has it
// abort what earlier runs staged that the store does not name, and
// commits the committables the store holds, whose checkpoint completed.
// Then:
//
//	Process(elems):           Sink.Write(open epoch, elems)
//	Barrier(N), N > epoch:    Sink.Prepare(epoch) into the store; epoch = N
//	CheckpointComplete(C):    Sink.Commit(committables below C), retried
//	Finish:                   prepare the open epoch, commit all, Close
//
// After a commit the committables and staging of the committed epochs
// leave the store; a crash between the commit and that finds them in the
// restored store, and Commit's idempotence writes nothing twice.
type Driver struct {
	Sink    Sink
	Pending *Pending
	// Name names the sink subtask in errors: "kafka sink w[0]: topic "t"".
	Name string
	// OnRetry hears each failed commit that is retried; nil drops them.
	OnRetry func(error)
	// Backoff is the wait before retry attempt (0 the first); default
	// Backoff.
	Backoff func(attempt int) time.Duration

	started bool
	run     string
	epoch   Epoch // the open epoch: the newest barrier seen
	wrote   bool  // the open epoch has writes
	// Committed counts the committables handed to a Commit that
	// succeeded (some may have been committed before), for tests.
	Committed int
}

var _ executor.CheckpointListener = (*Driver)(nil)

// start recovers, once, before anything else.
func (d *Driver) start(ctx context.Context) error {
	if d.started {
		return nil
	}
	lineage, err := d.Pending.Lineage()
	if err != nil {
		return err
	}
	sealed, err := d.Pending.Sealed()
	if err != nil {
		return err
	}
	restored, err := d.Pending.Prepared(0, sealed)
	if err != nil {
		return err
	}
	run, err := NewToken()
	if err != nil {
		return fmt.Errorf("%s: make run token: %w", d.Name, err)
	}
	if err := d.Sink.Open(ctx, Session{Lineage: lineage, Run: run, Staging: d.Pending}); err != nil {
		return fmt.Errorf("%s: open: %w", d.Name, err)
	}
	d.started, d.run, d.epoch = true, run, sealed
	abort := func(ctx context.Context) error { return d.Sink.Abort(ctx, restored) }
	if err := d.retry(ctx, fmt.Sprintf("%s: abort what the checkpoint does not hold", d.Name), abort); err != nil {
		return err
	}
	return d.commit(ctx, sealed)
}

// Process implements executor.Operator.
func (d *Driver) Process(ctx context.Context, _ int, elems [][]byte) error {
	if err := d.start(ctx); err != nil {
		return err
	}
	if len(elems) == 0 {
		return nil
	}
	d.wrote = true
	return d.Sink.Write(ctx, d.epoch, elems)
}

// Watermark implements executor.Operator: a sink has no output.
func (d *Driver) Watermark(context.Context, int, mtime.Time) error { return nil }

// Barrier implements executor.Operator: the pre-commit. The open epoch is
// prepared and its committable kept; the snapshot taken next holds it.
// A barrier not newer than the open epoch changes nothing.
func (d *Driver) Barrier(ctx context.Context, id executor.BarrierID) error {
	if err := d.start(ctx); err != nil {
		return err
	}
	if id <= d.epoch {
		return nil
	}
	if err := d.prepare(ctx); err != nil {
		return err
	}
	d.epoch = id
	return d.Pending.Seal(id)
}

// prepare ends the open epoch, if it has writes, and keeps its
// committable.
func (d *Driver) prepare(ctx context.Context) error {
	if !d.wrote {
		return nil
	}
	d.wrote = false
	c, err := d.Sink.Prepare(ctx, d.epoch)
	if err != nil {
		return fmt.Errorf("%s: prepare epoch %d: %w", d.Name, d.epoch, err)
	}
	if c == nil {
		return nil
	}
	return d.Pending.Prepare(d.epoch, d.run, c)
}

// CheckpointComplete implements executor.CheckpointListener: it commits
// every sealed epoch below id. A repeated or stale notification finds
// nothing to commit; one for a barrier this subtask has not seen commits
// only what is sealed.
func (d *Driver) CheckpointComplete(ctx context.Context, id executor.BarrierID) error {
	if err := d.start(ctx); err != nil {
		return err
	}
	return d.commit(ctx, min(id, d.epoch))
}

// Finish implements executor.Operator: at the end of the input every
// epoch is committed, the open one too, since no checkpoint will follow.
func (d *Driver) Finish(ctx context.Context) error {
	if err := d.start(ctx); err != nil {
		return err
	}
	err := d.prepare(ctx)
	if err == nil {
		err = d.commit(ctx, d.epoch+1)
	}
	if cerr := d.Sink.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: close: %w", d.Name, cerr)
	}
	return err
}

// commit commits the committables of the epochs below bound, retrying
// transient failures, then drops them and their staging from the store.
func (d *Driver) commit(ctx context.Context, bound Epoch) error {
	cs, err := d.Pending.Prepared(0, bound)
	if err != nil {
		return err
	}
	if len(cs) > 0 {
		what := fmt.Sprintf("%s: commit of checkpoint %d", d.Name, bound)
		if err := d.retry(ctx, what, func(ctx context.Context) error { return d.Sink.Commit(ctx, cs) }); err != nil {
			return err
		}
		d.Committed += len(cs)
	}
	return d.Pending.Delete(bound)
}

func (d *Driver) retry(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	backoff := d.Backoff
	if backoff == nil {
		backoff = Backoff
	}
	return RetryWith(ctx, what, backoff, fn, d.OnRetry)
}
