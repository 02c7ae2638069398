package triggers

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// Context is what a trigger sees when it is asked something: the window
// and the clocks.
type Context struct {
	// MaxTimestamp is the window's last instant.
	MaxTimestamp mtime.Time
	// Watermark is the input watermark.
	Watermark mtime.Time
	// Now is the processing time; SyncNow the synchronized processing time
	// (the minimum over the upstream stages; on one machine the same).
	Now, SyncNow mtime.Time
	// Merging is set when the window may merge with others (sessions). As
	// in Beam, an AfterEach then runs all its subtriggers on every element,
	// and AfterWatermark its early and late ones, because a merge can bring
	// a finished subtrigger back and it must have counted what it missed.
	Merging bool
}

// PastEndOfWindow reports whether the watermark has passed the window: no
// element inside it can still arrive on time.
func (c Context) PastEndOfWindow() bool { return c.Watermark > c.MaxTimestamp }

// State is the mutable state of one trigger tree for one (key, window):
// one entry per node. Its zero value is not usable; use Trigger.NewState.
type State struct {
	nodes []nodeState
}

type nodeState struct {
	finished bool
	count    int64      // elements seen (KindCount, KindAlways)
	armed    bool       // a processing-time deadline is set; KindEndOfWindow: late phase
	deadline mtime.Time // processing time at which a KindProcTime fires; first element's for KindSyncProcTime
}

// NewState returns the initial state of t.
func (t *Trigger) NewState() State { return State{nodes: make([]nodeState, len(t.nodes))} }

// Finished reports whether the root has finished: the window is closed and
// takes no more elements.
func (s *State) Finished() bool { return len(s.nodes) > 0 && s.nodes[0].finished }

// OnElement records one element arriving in the window.
func (t *Trigger) OnElement(s *State, c Context) { t.onElement(s, 0, c) }

// ShouldFire reports whether the window should emit a pane now.
func (t *Trigger) ShouldFire(s *State, c Context) bool { return t.shouldFire(s, 0, c) }

// OnFire records that the window fired (after ShouldFire said so). Check
// State.Finished afterwards: a finished trigger's pane is the last.
func (t *Trigger) OnFire(s *State, c Context) { t.onFire(s, 0, c) }

// NextDeadline is the earliest processing time at which a processing-time
// node may fire, for the caller's wake-up timer.
func (t *Trigger) NextDeadline(s *State) (mtime.Time, bool) {
	best, ok := mtime.MaxTimestamp, false
	for i, n := range t.nodes {
		ns := &s.nodes[i]
		if ns.finished || !ns.armed {
			continue
		}
		switch n.kind {
		case KindProcTime:
			best, ok = min(best, ns.deadline), true
		case KindSyncProcTime:
			best, ok = min(best, ns.deadline+1), true
		}
	}
	return best, ok
}

func (t *Trigger) onElement(s *State, i int, c Context) {
	n, ns := &t.nodes[i], &s.nodes[i]
	if ns.finished {
		return
	}
	switch n.kind {
	case KindAlways, KindCount:
		ns.count++
	case KindProcTime:
		if !ns.armed {
			d := c.Now
			for _, tt := range n.transforms {
				d = tt.Apply(d)
			}
			ns.armed, ns.deadline = true, d
		}
	case KindSyncProcTime:
		if !ns.armed {
			ns.armed, ns.deadline = true, c.SyncNow
		}
	case KindRepeat, KindAfterAll, KindAfterAny, KindOrFinally:
		for _, sub := range n.subs {
			t.onElement(s, sub, c)
		}
	case KindAfterEach:
		if c.Merging {
			for _, sub := range n.subs {
				t.onElement(s, sub, c)
			}
		} else if sub, ok := t.current(s, i); ok {
			t.onElement(s, sub, c)
		}
	case KindEndOfWindow:
		if (!ns.armed || c.Merging) && n.early >= 0 {
			t.onElement(s, n.early, c)
		}
		if (ns.armed || c.Merging) && n.late >= 0 {
			t.onElement(s, n.late, c)
		}
	}
}

// current is an AfterEach's first unfinished subtrigger.
func (t *Trigger) current(s *State, i int) (int, bool) {
	for _, sub := range t.nodes[i].subs {
		if !s.nodes[sub].finished {
			return sub, true
		}
	}
	return 0, false
}

func (t *Trigger) shouldFire(s *State, i int, c Context) bool {
	n, ns := &t.nodes[i], &s.nodes[i]
	if ns.finished {
		return false
	}
	switch n.kind {
	case KindDefault:
		return c.PastEndOfWindow()
	case KindAlways:
		return ns.count > 0
	case KindNever:
		return false
	case KindCount:
		return ns.count >= n.count
	case KindProcTime:
		return ns.armed && c.Now >= ns.deadline
	case KindSyncProcTime:
		// Strictly after: the stages upstream have all moved on from the
		// instant the first element arrived.
		return ns.armed && c.SyncNow > ns.deadline
	case KindRepeat:
		return t.shouldFire(s, n.subs[0], c)
	case KindAfterAll:
		for _, sub := range n.subs {
			if !s.nodes[sub].finished && !t.shouldFire(s, sub, c) {
				return false
			}
		}
		return true
	case KindAfterAny:
		for _, sub := range n.subs {
			if t.shouldFire(s, sub, c) {
				return true
			}
		}
		return false
	case KindAfterEach:
		sub, ok := t.current(s, i)
		return ok && t.shouldFire(s, sub, c)
	case KindOrFinally:
		return t.shouldFire(s, n.subs[0], c) || t.shouldFire(s, n.subs[1], c)
	case KindEndOfWindow:
		if ns.armed {
			return n.late >= 0 && t.shouldFire(s, n.late, c)
		}
		return c.PastEndOfWindow() || n.early >= 0 && t.shouldFire(s, n.early, c)
	}
	return false
}

func (t *Trigger) onFire(s *State, i int, c Context) {
	n, ns := &t.nodes[i], &s.nodes[i]
	if ns.finished {
		return
	}
	switch n.kind {
	case KindDefault, KindNever:
	case KindAlways:
		ns.count = 0
	case KindCount, KindProcTime, KindSyncProcTime:
		ns.finished = true
	case KindRepeat:
		sub := n.subs[0]
		t.onFire(s, sub, c)
		if s.nodes[sub].finished {
			t.clear(s, sub)
		}
	case KindAfterAll:
		for _, sub := range n.subs {
			t.onFire(s, sub, c)
		}
		ns.finished = true
	case KindAfterAny:
		for _, sub := range n.subs {
			if t.shouldFire(s, sub, c) {
				t.onFire(s, sub, c)
			}
		}
		ns.finished = true
	case KindAfterEach:
		if sub, ok := t.current(s, i); ok {
			t.onFire(s, sub, c)
		}
		if c.Merging {
			// The subtriggers ran in parallel; the next pane starts afresh.
			for _, sub := range n.subs {
				t.restart(s, sub)
			}
		}
		_, unfinished := t.current(s, i)
		ns.finished = !unfinished
	case KindOrFinally:
		main, until := n.subs[0], n.subs[1]
		if t.shouldFire(s, until, c) {
			t.onFire(s, until, c)
			t.clear(s, main)
		} else {
			t.onFire(s, main, c)
		}
		ns.finished = s.nodes[main].finished || s.nodes[until].finished
	case KindEndOfWindow:
		t.onFireEndOfWindow(s, i, c)
	}
}

// onFireEndOfWindow: early firings repeat until the watermark passes the
// window; that firing is the on-time one, after which late firings repeat,
// or the trigger finishes when there are none.
func (t *Trigger) onFireEndOfWindow(s *State, i int, c Context) {
	n, ns := &t.nodes[i], &s.nodes[i]
	switch {
	case !ns.armed && !c.PastEndOfWindow():
		t.onFire(s, n.early, c)
		if s.nodes[n.early].finished {
			t.clear(s, n.early)
		}
	case !ns.armed:
		if n.early >= 0 {
			t.clear(s, n.early)
		}
		if n.late >= 0 {
			t.clear(s, n.late) // it ran in parallel when merging
		}
		ns.armed = true
		ns.finished = n.late < 0
	default:
		t.onFire(s, n.late, c)
		if s.nodes[n.late].finished {
			t.clear(s, n.late)
		}
	}
}

// clear resets node i and its descendants to their initial state.
func (t *Trigger) clear(s *State, i int) {
	s.nodes[i] = nodeState{}
	n := &t.nodes[i]
	for _, sub := range n.subs {
		t.clear(s, sub)
	}
	if n.early >= 0 {
		t.clear(s, n.early)
	}
	if n.late >= 0 {
		t.clear(s, n.late)
	}
}

// restart resets node i and its descendants for a new pane but keeps
// which of them finished, and which AfterWatermark is in its late phase:
// Beam's clear, which leaves the finished bits alone.
func (t *Trigger) restart(s *State, i int) {
	ns := &s.nodes[i]
	n := &t.nodes[i]
	keepArmed := n.kind == KindEndOfWindow && ns.armed
	*ns = nodeState{finished: ns.finished, armed: keepArmed}
	for _, sub := range n.subs {
		t.restart(s, sub)
	}
	if n.early >= 0 {
		t.restart(s, n.early)
	}
	if n.late >= 0 {
		t.restart(s, n.late)
	}
}

// Check reports whether s is a state of t, as one decoded from a store
// must be before t reads it.
func (t *Trigger) Check(s *State) error {
	if len(s.nodes) != len(t.nodes) {
		return fmt.Errorf("triggers: state has %d nodes, trigger %v has %d", len(s.nodes), t, len(t.nodes))
	}
	return nil
}

// AppendBinary appends the state's encoding, so a store can keep it.
func (s *State) AppendBinary(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(s.nodes)))
	for _, n := range s.nodes {
		var flags byte
		if n.finished {
			flags |= 1
		}
		if n.armed {
			flags |= 2
		}
		b = append(b, flags)
		b = binary.AppendVarint(b, n.count)
		b = binary.AppendVarint(b, int64(n.deadline))
	}
	return b, nil
}

// UnmarshalBinary decodes a state written by AppendBinary.
func (s *State) UnmarshalBinary(b []byte) error {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return fmt.Errorf("triggers: malformed state")
	}
	b = b[k:]
	s.nodes = make([]nodeState, n)
	for i := range s.nodes {
		if len(b) < 1 {
			return fmt.Errorf("triggers: malformed state")
		}
		flags := b[0]
		b = b[1:]
		c, k1 := binary.Varint(b)
		if k1 <= 0 {
			return fmt.Errorf("triggers: malformed state")
		}
		d, k2 := binary.Varint(b[k1:])
		if k2 <= 0 {
			return fmt.Errorf("triggers: malformed state")
		}
		b = b[k1+k2:]
		s.nodes[i] = nodeState{finished: flags&1 != 0, armed: flags&2 != 0, count: c, deadline: mtime.Time(d)}
	}
	if len(b) != 0 {
		return fmt.Errorf("triggers: malformed state: %d trailing bytes", len(b))
	}
	return nil
}
