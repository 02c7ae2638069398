package executor

import (
	"context"
	"fmt"
	"sync"
)

// CheckpointListener is implemented by operators that act once a
// checkpoint is complete: the second phase of a two-phase-commit sink,
// which makes visible what it pre-committed at the barrier (Flink's
// notifyCheckpointComplete).
//
// CheckpointComplete runs in the subtask's own goroutine, between the
// messages of its inbox, never concurrently with Process, Barrier or
// Finish: the operator needs no lock. It is called only after the
// operator's Barrier(id) returned. Notifications coalesce: when several
// checkpoints complete before the subtask gets to them, it hears only the
// newest, so a listener must commit everything up to id, not just id's
// part. A subtask that finished hears nothing more.
//
// An error fails the job. A listener retries transient failures itself
// (a broker that is down) and returns only what cannot succeed, or the
// context's error.
type CheckpointListener interface {
	CheckpointComplete(ctx context.Context, id BarrierID) error
}

// completions is a subtask's mailbox slot for checkpoint completions. It
// is not the data inbox on purpose: the inbox is bounded and a slow
// subtask's inbox is full (backpressure), and the runner goroutine that
// reports completions must never block on one subtask. One slot holding
// the newest id loses nothing, since a commit covers every checkpoint up
// to its id.
type completions struct {
	ready chan struct{} // one token while newest is unread
	mu    sync.Mutex
	// newest is the newest completed checkpoint not yet delivered; 0 none.
	newest BarrierID
}

func newCompletions() *completions { return &completions{ready: make(chan struct{}, 1)} }

// post records that checkpoint id completed, without blocking.
func (c *completions) post(id BarrierID) {
	c.mu.Lock()
	if id > c.newest {
		c.newest = id
	}
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

// take returns the newest completed checkpoint and clears it; 0 when a
// token outlived what it announced.
func (c *completions) take() BarrierID {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.newest
	c.newest = 0
	return id
}

// listen registers st's operator for completions if it is a
// CheckpointListener; the subtask's loop then selects on the returned
// channel and calls deliver.
func (g *Graph) listen(st *subtask, op Operator) {
	if _, ok := op.(CheckpointListener); !ok {
		return
	}
	st.completions = newCompletions()
	g.mu.Lock()
	g.listeners = append(g.listeners, st)
	g.mu.Unlock()
}

// CheckpointComplete tells every operator that is a CheckpointListener
// that checkpoint id is complete (durable). It does not block: each
// subtask hears of it in its own goroutine. The runner calls it once the
// checkpoint is visible in storage.
func (g *Graph) CheckpointComplete(id BarrierID) {
	g.mu.Lock()
	ls := g.listeners
	g.mu.Unlock()
	for _, st := range ls {
		st.completions.post(id)
	}
}

// deliverCompletion hands the newest completion to the subtask's operator.
func deliverCompletion(ctx context.Context, st *subtask, op Operator) error {
	id := st.completions.take()
	if id == 0 {
		return nil
	}
	if err := op.(CheckpointListener).CheckpointComplete(ctx, id); err != nil {
		return fmt.Errorf("commit of checkpoint %d: %w", id, err)
	}
	return nil
}

// completionsOf returns the channel a subtask's loop selects on; nil (never
// ready) for subtasks that do not listen.
func completionsOf(st *subtask) <-chan struct{} {
	if st.completions == nil {
		return nil
	}
	return st.completions.ready
}
