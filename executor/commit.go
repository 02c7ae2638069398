package executor

import (
	"context"
	"fmt"
	"slices"
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
	// committed is the newest checkpoint the operator committed; ended
	// says the subtask returned. changed is closed and replaced when
	// either changes (WaitCommitted waits on it).
	committed BarrierID
	ended     bool
	changed   chan struct{}
}

func newCompletions() *completions {
	return &completions{ready: make(chan struct{}, 1), changed: make(chan struct{})}
}

// note records a commit or the subtask's end and wakes the waiters.
func (c *completions) note(committed BarrierID, ended bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.committed = max(c.committed, committed)
	c.ended = c.ended || ended
	close(c.changed)
	c.changed = make(chan struct{})
}

// done reports whether checkpoint id is committed (or the subtask ended,
// and so hears nothing more), and otherwise returns a channel closed at
// the next change.
func (c *completions) done(id BarrierID) (bool, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.committed >= id || c.ended, c.changed
}

// WaitCommitted returns once every CheckpointListener has committed
// checkpoint id (or a later one), or its subtask has ended: a stop with a
// savepoint waits for it so the savepoint's output is visible before the
// job stops, not only after a restore re-commits it.
func (g *Graph) WaitCommitted(ctx context.Context, id BarrierID) error {
	g.mu.Lock()
	ls := g.listeners
	g.mu.Unlock()
	for _, st := range ls {
		for {
			ok, changed := st.completions.done(id)
			if ok {
				break
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
	}
	return nil
}

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

// listen registers st for completions if x, its operator or source, is a
// CheckpointListener; the subtask's loop then selects on the returned
// channel and calls deliver (a source inside Injector.Poll, between its
// emissions). Sources are kept apart from operators (source is true):
// WaitCommitted waits for what sinks make visible, and a source's commit
// (a Kafka read's consumer offsets) is not that.
func (g *Graph) listen(st *subtask, x any, source bool) {
	if _, ok := x.(CheckpointListener); !ok {
		return
	}
	st.completions = newCompletions()
	g.mu.Lock()
	if source {
		g.sourceListeners = append(g.sourceListeners, st)
	} else {
		g.listeners = append(g.listeners, st)
	}
	g.mu.Unlock()
}

// CheckpointComplete tells every operator and source that is a
// CheckpointListener that checkpoint id is complete (durable). It does
// not block: each subtask hears of it in its own goroutine. The runner
// calls it once the checkpoint is visible in storage.
func (g *Graph) CheckpointComplete(id BarrierID) {
	g.mu.Lock()
	ls := append(slices.Clip(g.listeners), g.sourceListeners...)
	g.mu.Unlock()
	for _, st := range ls {
		st.completions.post(id)
	}
}

// deliverCompletion hands the newest completion to the subtask's listener.
func deliverCompletion(ctx context.Context, c *completions, l CheckpointListener) error {
	id := c.take()
	if id == 0 {
		return nil
	}
	if err := l.CheckpointComplete(ctx, id); err != nil {
		return fmt.Errorf("commit of checkpoint %d: %w", id, err)
	}
	c.note(id, false)
	return nil
}

// EndListener is implemented by sources that act once the whole graph has
// ended. GraphEnded runs once per Graph.Run, after every subtask has
// returned, with the graph's error: nil when every subtask finished, so
// everything the source emitted has been processed and every sink has
// flushed or committed it. A Kafka read with CommitOffsetsInFinalize
// commits its final offsets then. A source hears it also when the graph
// failed (its own Run may have failed, or been cancelled), so it can
// release what it holds; an error it returns on success fails the graph.
// A graph that fails while it starts its subtasks tells no one.
type EndListener interface {
	GraphEnded(ctx context.Context, err error) error
}

// graphEnded tells the sources that are EndListeners that the graph
// ended with err, and returns the graph's error.
func graphEnded(ctx context.Context, srcs []Source, err error) error {
	for _, src := range srcs {
		l, ok := src.(EndListener)
		if !ok {
			continue
		}
		if lerr := l.GraphEnded(ctx, err); lerr != nil && err == nil {
			err = lerr
		}
	}
	return err
}

// completionsOf returns the channel a subtask's loop selects on; nil (never
// ready) for subtasks that do not listen.
func completionsOf(st *subtask) <-chan struct{} {
	if st.completions == nil {
		return nil
	}
	return st.completions.ready
}
