// Package checkpoint coordinates barrier snapshots and stores them.
//
// A Coordinator is the pure logic of one job's checkpoints: when to trigger
// the next one (every interval, at most one in flight, a minimum pause after
// the previous), when the one in flight has expired, when every subtask has
// acknowledged it, how many failures in a row the job tolerates, and when a
// subtask still aligning a barrier switches to unaligned. It reads no clock:
// every call takes the current instant, so tests drive it with tables. A
// Driver runs a Coordinator on a Clock in a goroutine its caller owns.
//
// Checkpoint ids only grow within a job, and a checkpoint is "complete" only
// once every subtask acknowledged it and its files are stored: the
// Coordinator says when that is (Ack returns ready), the caller stores and
// reports back (Complete or Fail).
//
// Storage (see Storage) writes checkpoint N into chk-N.tmp under a root
// folder, records every file's size and SHA-256 in a MANIFEST, syncs, and
// renames the folder to chk-N, so only complete checkpoints are ever
// visible; Latest verifies the newest and falls back, reporting each
// corrupt checkpoint it passed over. Folders it makes are synced into
// their parents, so a machine crash keeps what it published.
//
// A root belongs to one running job: LockRoot takes its lock file before
// anything opens it (OpenStorage removes unfinished checkpoints, which
// would be another job's in flight) and records the holder, so a second
// job, in this process or another, is refused naming the first. The
// operating system frees the lock when its holder dies.
package checkpoint
