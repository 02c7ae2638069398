package twophase

import (
	"context"

	"github.com/weir-runner/weir/executor"
)

// Epoch names a sink subtask's output between two barriers: the ID of the
// barrier that opened it, 0 before the first. Epochs only grow; barrier
// N seals every epoch below N.
type Epoch = executor.BarrierID

// Committable is what a sink's Prepare returned for an epoch: all the
// Driver keeps in the checkpoint to commit the epoch later, in this
// process or in a restored one. Run is the token of the run that prepared
// it (Session.Run): a restored sink commits committables of the run it
// was restored from.
type Committable struct {
	Epoch Epoch
	Run   string
	Data  []byte
}

// Sink is an exactly-once sink's side of two-phase commit. A Driver owns
// the protocol: the epochs, sealing at barriers, what the checkpoint
// holds, when to commit, retries, recovery after a restore. The sink only
// moves data, through these calls, from one goroutine, in this order:
//
//	Open, Abort(restored committables), Commit(them, if any)
//	then, for each epoch e that has output:
//	    Write(e, ...)*   Prepare(e)
//	and, between any two of those, Commit(committables of sealed epochs)
//	at the end of the input: Prepare(open epoch), Commit(the rest), Close
//
// How each kind of sink fits:
//
//   - A sink whose system cannot keep a transaction open across a crash
//     (Kafka: franz-go cannot resume one; a database without PREPARE
//     TRANSACTION) stages records in Session.Staging, which the store
//     snapshots carry, and writes them in one transaction at Commit,
//     atomically with a marker (the run, and the epoch below which it has
//     committed everything) that makes Commit idempotent.
//   - A sink that can stage outside (files) writes there as records come,
//     under names that hold the lineage and the run, makes it durable at
//     Prepare, and returns its name; Commit publishes it (renames)
//     idempotently, and Abort removes staging a crash left.
type Sink interface {
	// Open starts the sink, once, before any other call.
	Open(ctx context.Context, s Session) error
	// Abort discards whatever earlier runs of this lineage staged that
	// restored does not name: it was written after the checkpoint the job
	// was restored from, no checkpoint holds it, and the sources replay its
	// input. restored are the checkpoint's committables, committed next;
	// none on a fresh start. Called once, after Open, and retried: it must
	// be idempotent.
	Abort(ctx context.Context, restored []Committable) error
	// Write adds elements (windowed values in the input's wire encoding)
	// to epoch's transaction or staging area, opening it at its first
	// write. An error fails the job.
	Write(ctx context.Context, epoch Epoch, elems [][]byte) error
	// Prepare ends epoch (the pre-commit): what it wrote must be durable,
	// and committable from the returned bytes alone by a sink in another
	// process. The Driver calls it only for an epoch with writes, and
	// keeps the committable in the checkpoint. nil means there is nothing
	// to commit.
	Prepare(ctx context.Context, epoch Epoch) ([]byte, error)
	// Commit makes committables visible, in epoch order. It must be
	// idempotent: after a crash, or a failure whose outcome is unknown,
	// the Driver calls it again with committables some or all of which
	// are committed already, and it must not write them twice. Whether one
	// is committed is a question about its (Run, Epoch), never its Epoch
	// alone: a restored job reuses epoch numbers under a new run. An error
	// marked Permanent fails the job; any other is retried.
	Commit(ctx context.Context, cs []Committable) error
	// Close releases what the sink holds, after the last commit.
	Close() error
}

// Session is what a Sink is opened with.
type Session struct {
	// Lineage is the token of the job's line of runs: made on a fresh
	// store and kept in it, so a restored sink has the lineage of the run
	// it restores. Abort discards staging of its lineage only: another
	// job may write next to it.
	Lineage string
	// Run is this run's token, new at every start, fresh or restored. A
	// sink writes it with what marks a commit and in the names of what it
	// stages and publishes: a restored run numbers its epochs again from
	// the restored checkpoint (from 1, restored from a savepoint into a
	// new folder), and what an earlier run committed under the same
	// numbers says nothing about this run's output.
	Run string
	// Staging is the sink subtask's staging area in the job's store,
	// exported with every snapshot. What a sink appends to an epoch there
	// is dropped when that epoch is committed.
	Staging Staging
}

// Staging is a sink's store-backed staging area: values by epoch, in
// append order. *Pending implements it.
type Staging interface {
	// Append adds values to epoch in one store write.
	Append(epoch Epoch, values [][]byte) error
	// Read calls fn with every value of the epochs in [lo, hi), epoch by
	// epoch, each in append order; fn must not keep v.
	Read(lo, hi Epoch, fn func(epoch Epoch, v []byte) error) error
}

var _ Staging = (*Pending)(nil)
