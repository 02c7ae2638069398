package conformance

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
)

// collector is the operator after the source: it keeps the values, where
// each barrier passed, and holds the stream when asked.
type collector struct {
	h        SourceHarness
	mu       sync.Mutex
	changed  chan struct{}
	out      []string
	cuts     map[executor.BarrierID]int
	finished bool
	// hold, when set, makes Process wait until it is closed or a step
	// lets one call through; holdAt sets a new one once barrier holdAt
	// passes (at the next release, if the stream was still held then).
	hold   chan struct{}
	step   chan struct{}
	holdAt executor.BarrierID
	rehold bool
}

func newCollector(h SourceHarness) *collector {
	return &collector{h: h, changed: make(chan struct{}), cuts: map[executor.BarrierID]int{},
		hold: make(chan struct{}), step: make(chan struct{})}
}

func (c *collector) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *collector) waitFor(cond func() bool) {
	for {
		c.mu.Lock()
		ok, ch := cond(), c.changed
		c.mu.Unlock()
		if ok {
			return
		}
		<-ch
	}
}

func (c *collector) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.out)
}

func (c *collector) upTo(id executor.BarrierID) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.cuts[id]
	if !ok {
		n = len(c.out) // the source had ended: everything is before the barrier
	}
	return slices.Clone(c.out[:n])
}

func (c *collector) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hold != nil {
		close(c.hold)
		c.hold = nil
	}
	if c.rehold {
		c.hold, c.rehold = make(chan struct{}), false
	}
}

func (c *collector) holdAfter(id executor.BarrierID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holdAt = id
}

// Process implements executor.Operator.
func (c *collector) Process(ctx context.Context, _ int, elems [][]byte) error {
	c.mu.Lock()
	for _, e := range elems {
		v, err := c.h.Value(e)
		if err != nil {
			c.mu.Unlock()
			return err
		}
		c.out = append(c.out, v)
	}
	hold := c.hold
	c.notifyLocked()
	c.mu.Unlock()
	if hold == nil {
		return nil
	}
	select {
	case <-hold:
		return nil
	case <-c.step:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Watermark implements executor.Operator.
func (c *collector) Watermark(context.Context, int, mtime.Time) error { return nil }

// Barrier implements executor.Operator.
func (c *collector) Barrier(_ context.Context, id executor.BarrierID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cuts[id] = len(c.out)
	if id == c.holdAt {
		if c.hold == nil {
			c.hold = make(chan struct{})
		} else {
			c.rehold = true
		}
	}
	c.notifyLocked()
	return nil
}

// Finish implements executor.Operator.
func (c *collector) Finish(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finished = true
	c.notifyLocked()
	return nil
}

// checkpoints is the graph's Checkpointer: it keeps the source's part of
// each checkpoint and says when every subtask has done its part.
type checkpoints struct {
	mu      sync.Mutex
	changed chan struct{}
	parts   map[executor.BarrierID]map[int]bool // nodes done, by checkpoint
	source  map[executor.BarrierID][]byte
	ended   map[int]bool // nodes finished
}

type sourcePart struct {
	finished bool
	state    []byte
}

func newCheckpoints() *checkpoints {
	return &checkpoints{changed: make(chan struct{}), parts: map[executor.BarrierID]map[int]bool{},
		source: map[executor.BarrierID][]byte{}, ended: map[int]bool{}}
}

func (c *checkpoints) SwitchAt(executor.BarrierID) (time.Time, bool) { return time.Time{}, false }

func (c *checkpoints) Snapshot(int, int, executor.BarrierID) error { return nil }

func (c *checkpoints) Done(r executor.BarrierRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parts[r.ID] == nil {
		c.parts[r.ID] = map[int]bool{}
	}
	c.parts[r.ID][r.Node] = true
	if r.Node == 0 {
		c.source[r.ID] = r.State
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *checkpoints) Finished(node, _ int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended[node] = true
	close(c.changed)
	c.changed = make(chan struct{})
}

// sourceTook reports whether the source has done its part of checkpoint
// id or ended, and returns the channel closed at the next change.
func (c *checkpoints) sourceTook(id executor.BarrierID) (bool, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parts[id][0] || c.ended[0], c.changed
}

// wait returns the source's part of checkpoint id once both subtasks did
// theirs (or ended: a finished source takes part in no later checkpoint).
// A graph that stops first fails the test.
func (c *checkpoints) wait(t *testing.T, id executor.BarrierID, done chan error) sourcePart {
	t.Helper()
	for {
		c.mu.Lock()
		src := c.parts[id][0] || c.ended[0]
		col := c.parts[id][1] || c.ended[1]
		part := sourcePart{finished: !c.parts[id][0] && c.ended[0], state: c.source[id]}
		ch := c.changed
		c.mu.Unlock()
		if src && col {
			return part
		}
		select {
		case <-ch:
		case err := <-done:
			done <- err
			if err != nil {
				t.Fatalf("the graph failed before checkpoint %d: %v", id, err)
			}
			// Ended: every subtask said Finished; look again.
			done = nil
		}
	}
}
