package checkpoint

import "time"

// ID numbers checkpoints; it only grows within a job.
type ID uint64

// Task names one subtask: a node of the graph and its index.
type Task struct {
	Node, Subtask int
}

// Ack is a subtask's acknowledgement of a checkpoint: its snapshot is taken
// (synchronous part) and written (asynchronous part).
type Ack struct {
	Task Task
	ID   ID
	// Arrival is when the first barrier of the checkpoint reached the
	// subtask (for a source: when it injected it).
	Arrival time.Time
	// Alignment is from the first barrier to the snapshot: how long the
	// subtask held back channels that had delivered the barrier.
	Alignment time.Duration
	// Sync is the synchronous part of the snapshot, which stops the
	// subtask; Async is the part written while the subtask runs on.
	Sync, Async time.Duration
	// Bytes is what the subtask's snapshot wrote, in-flight data included;
	// InFlightBytes is the in-flight data alone (unaligned only).
	Bytes, InFlightBytes int64
	// Unaligned says the subtask forwarded the barrier before every
	// channel had delivered it.
	Unaligned bool
}

// SubtaskStats is one subtask's part of a checkpoint.
type SubtaskStats struct {
	Ack
	// StartDelay is from the trigger to the first barrier's arrival: how
	// long the barrier queued behind data on its way.
	StartDelay time.Duration
	// Acked is when the acknowledgement reached the coordinator.
	Acked time.Time
}

// Status says where a checkpoint is.
type Status int

// Statuses.
const (
	InProgress Status = iota
	Completed
	Failed
)

func (s Status) String() string {
	switch s {
	case InProgress:
		return "in progress"
	case Completed:
		return "completed"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Stats describe one checkpoint.
type Stats struct {
	ID      ID
	Trigger time.Time
	End     time.Time // zero while in progress
	Status  Status
	// Reason says why a failed checkpoint failed.
	Reason string
	// Subtasks are the acknowledgements received, in arrival order.
	Subtasks []SubtaskStats
	// Total is how many subtasks must acknowledge.
	Total int
	// Savepoint marks a checkpoint taken on request (RequestSavepoint):
	// always aligned, and its failure does not count against the
	// tolerable failures.
	Savepoint bool
}

// Duration is from trigger to end (or to now while in progress, which the
// caller passes).
func (s *Stats) Duration(now time.Time) time.Duration {
	if !s.End.IsZero() {
		now = s.End
	}
	return now.Sub(s.Trigger)
}

// Summary is the per-checkpoint figures users read first: totals and the
// worst subtask of each duration.
type Summary struct {
	Bytes, InFlightBytes         int64
	UnalignedSubtasks            int
	MaxStartDelay, MaxAlignment  time.Duration
	MaxSync, MaxAsync            time.Duration
	AckedSubtasks, TotalSubtasks int
}

// Summary adds up the subtasks' figures.
func (s *Stats) Summary() Summary {
	sum := Summary{AckedSubtasks: len(s.Subtasks), TotalSubtasks: s.Total}
	for _, t := range s.Subtasks {
		sum.Bytes += t.Bytes
		sum.InFlightBytes += t.InFlightBytes
		if t.Unaligned {
			sum.UnalignedSubtasks++
		}
		sum.MaxStartDelay = max(sum.MaxStartDelay, t.StartDelay)
		sum.MaxAlignment = max(sum.MaxAlignment, t.Alignment)
		sum.MaxSync = max(sum.MaxSync, t.Sync)
		sum.MaxAsync = max(sum.MaxAsync, t.Async)
	}
	return sum
}
