// Package twophase holds what weir's exactly-once sinks share: the
// two-phase-commit protocol over the job's store, and retries of commits.
//
// A sink subtask keeps its uncommitted output in the store under its own
// namespace, in epochs. An epoch is named by the newest barrier the
// subtask had seen when the output arrived (0 before the first): output
// that arrives after Barrier(B) goes into epoch B. So at Barrier(N) every
// epoch below N is sealed (the pre-commit), and the store snapshot of
// checkpoint N holds them, with no copy and no extra step, because the
// runner exports the sink's namespace with every snapshot.
//
// A commit covers the epochs below a bound, and the sink records the
// bound with the commit, atomically, as a marker (Kafka: an offset commit
// in the same transaction; files: the renamed files themselves). Marker M
// means "every epoch below M is committed". The caller's loop:
//
//	on start (fresh, or over a store imported from checkpoint N):
//	    B := Pending.Sealed()        // N after a restore, 0 when fresh
//	    M := read the marker
//	    commit Plan(M, B)            // what the crashed run did not commit
//	on each record:   Pending.Append(B, record)
//	on Barrier(N):    B = N; Pending.Seal(N)
//	on CheckpointComplete(C): commit Plan(M, C); M = max(M, C)
//	on end of input:  commit Plan(M, B+1)
//
// Plan says which epochs to write (those in [M, bound)) and which to
// delete from the store (all below max(M, bound)): a crash after the
// commit but before the delete finds the marker and writes nothing twice.
//
// Why the records wait in the store rather than in an open Kafka
// transaction, as Flink's sink does: franz-go cannot resume a transaction
// after a restart (a new client's InitProducerID aborts it) and kfake
// aborts open transactions when it stops, so a transaction left open
// across a crash would lose its records. Here no transaction is open
// between checkpoints; each commit opens and closes one.
package twophase
