package kafka

import "sync"

// Budget is what the subtasks of a bounded read (max_records) share: the
// records delivered in all. A read of several subtasks ends when all of
// them together have delivered max_records, whichever partitions they
// came from, exactly as a read of one subtask does; splitting the count
// ahead of time (Beam's UnboundedToBoundedSourceAdapter gives each split
// max/n) would leave a subtask whose partitions hold fewer records than
// its share waiting for ever.
//
// A restored read counts on from its checkpoint: each subtask adds the
// records it had delivered (Position.Read) before any subtask delivers
// more, so no subtask reads past the total while another has not joined
// yet. A subtask whose snapshot saw the total reached (Position.Total)
// ends the read at once: the others may have finished before the
// checkpoint and have no part of it to add.
//
// Budget is safe for concurrent use by the readers of one process.
type Budget struct {
	max      int64
	subtasks int

	mu     sync.Mutex
	n      int64 // records delivered, or reserved to be delivered
	joined int
	ready  chan struct{} // closed once every subtask has joined
}

// NewBudget returns the budget of a read of records over subtasks
// readers.
func NewBudget(records int64, subtasks int) *Budget {
	return &Budget{max: records, subtasks: max(subtasks, 1), ready: make(chan struct{})}
}

// join adds a reader: read is what it delivered before a restore, total
// the budget's count its snapshot saw (both 0 for a fresh start).
func (b *Budget) join(read, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += read
	if total >= b.max {
		b.n = max(b.n, b.max)
	}
	b.joined++
	if b.joined == b.subtasks {
		close(b.ready)
	}
}

// Ready is closed once every subtask has joined; until then none
// delivers (take fails).
func (b *Budget) Ready() <-chan struct{} { return b.ready }

// take reserves one record, and reports whether there was one left. The
// caller delivers the record it reserved.
func (b *Budget) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.joined < b.subtasks || b.n >= b.max {
		return false
	}
	b.n++
	return true
}

// exhausted reports whether the subtasks have delivered max records.
func (b *Budget) exhausted() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n >= b.max
}

// count returns the records delivered in all.
func (b *Budget) count() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
