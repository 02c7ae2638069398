// Package twophase holds what weir's exactly-once sinks share: the
// two-phase-commit protocol over the job's store (Driver), the small
// interface a sink implements to take part in it (Sink), and retries of
// commits.
//
// A sink subtask's output is cut into epochs. An epoch is named by the
// newest barrier the subtask had seen when the output arrived (0 before
// the first): output that arrives after Barrier(B) goes into epoch B. So
// at Barrier(N) every epoch below N is sealed (the pre-commit: the sink
// prepares it and the Driver keeps its committable), and the store
// snapshot of checkpoint N holds the committables, with no copy and no
// extra step, because the runner exports the sink's namespace with every
// snapshot. The Driver's loop, as an executor operator:
//
//	on start (fresh, or over a store imported from checkpoint N):
//	    B := Pending.Sealed()                 // N after a restore, 0 when fresh
//	    R := the committables below B         // N completed: they are final
//	    Sink.Open(lineage, a new run token, staging)
//	    Sink.Abort(R)                         // what the crashed run wrote after N
//	    Sink.Commit(R)
//	on each batch:            Sink.Write(B, batch)
//	on Barrier(N), N > B:     Pending.Prepare(B, Sink.Prepare(B)); B = N; Pending.Seal(N)
//	on CheckpointComplete(C): Sink.Commit(committables below C), retried; drop them
//	on end of input:          prepare B, commit everything, Sink.Close
//
// Commit must be idempotent: a crash after a commit but before the Driver
// drops the committables from the store finds them in the restored store
// and commits them again; so does a retry after a failure whose outcome
// was unknown. A sink achieves it with a marker written atomically with
// its data (Kafka: an offset commit in the same transaction; a database:
// a row naming the run and epoch) or an operation that is its own marker
// (files: renaming a file that was renamed already is a no-op).
//
// Every start is a new run with a token of its own, and a committable
// names the run that prepared it. A restored job numbers its epochs again
// from the restored checkpoint: restored from one older than the newest
// commit (or from a savepoint, into a folder whose checkpoints start at
// 1), its new epochs have numbers an earlier run committed already. Had
// the marker been the lineage's, "committed below M" would drop the new
// epochs' output; per run, it only stops the restored committables from
// being written twice. What the earlier run committed after the restored
// checkpoint is then written again when its input is replayed: a restore
// cannot take back what is visible, and losing nothing comes first.
//
// Why a Kafka sink's records wait in the store (Session.Staging) rather
// than in an open Kafka transaction, as Flink's sink does: franz-go cannot
// resume a transaction after a restart (a new client's InitProducerID
// aborts it) and kfake aborts open transactions when it stops, so a
// transaction left open across a crash would lose its records. Here no
// transaction is open between checkpoints; each commit opens and closes
// one.
//
// The conformance suite in connector/conformance runs every sink through
// crashes at each step of this protocol, failed and retried commits,
// restores from checkpoints older than the last commit, and repeated
// notifications.
package twophase
