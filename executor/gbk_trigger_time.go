package executor

import (
	"container/heap"
	"context"
	"encoding/binary"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/state"
)

// deadlines are the processing-time instants at which open windows' triggers
// may fire, so a wake-up reads only the windows that are due rather than
// every window. They live in memory, one entry per window with an armed
// processing-time trigger, and are rebuilt from the store when the operator
// starts. Entries are replaced lazily: the heap may hold stale ones, which
// at (the current deadline of each window) tells apart.
type deadlines struct {
	at map[string]mtime.Time // window → its current deadline
	h  deadlineHeap
}

type deadline struct {
	t   mtime.Time
	win string // windowRef
}

type deadlineHeap []deadline

func (h deadlineHeap) Len() int { return len(h) }
func (h deadlineHeap) Less(i, j int) bool {
	return h[i].t < h[j].t || h[i].t == h[j].t && h[i].win < h[j].win
}
func (h deadlineHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)   { *h = append(*h, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}

// windowRef encodes a window's id as a map key: key group, last instant,
// length-prefixed key, window.
func windowRef(id state.WindowID) string {
	b := make([]byte, 0, 12+len(id.Key)+len(id.Window))
	b = binary.BigEndian.AppendUint16(b, uint16(id.KeyGroup))
	b = binary.BigEndian.AppendUint64(b, uint64(id.End))
	b = binary.AppendUvarint(b, uint64(len(id.Key)))
	b = append(b, id.Key...)
	return string(append(b, id.Window...))
}

func parseWindowRef(r string) state.WindowID {
	b := []byte(r)
	id := state.WindowID{KeyGroup: int(binary.BigEndian.Uint16(b)), End: mtime.Time(binary.BigEndian.Uint64(b[2:]))}
	n, w := binary.Uvarint(b[10:])
	id.Key = b[10+w : 10+w+int(n)]
	id.Window = b[10+w+int(n):]
	return id
}

func (d *deadlines) set(id state.WindowID, t mtime.Time) {
	if d.at == nil {
		d.at = map[string]mtime.Time{}
	}
	r := windowRef(id)
	if old, ok := d.at[r]; ok && old == t {
		return
	}
	d.at[r] = t
	heap.Push(&d.h, deadline{t, r})
}

func (d *deadlines) remove(id state.WindowID) {
	if len(d.at) > 0 {
		delete(d.at, windowRef(id))
	}
}

// next is the earliest live deadline; it drops stale entries on the way.
func (d *deadlines) next() (mtime.Time, bool) {
	for d.h.Len() > 0 {
		top := d.h[0]
		if t, ok := d.at[top.win]; ok && t == top.t {
			return top.t, true
		}
		heap.Pop(&d.h)
	}
	return 0, false
}

// due takes out the windows whose deadline is at or before now.
func (d *deadlines) due(now mtime.Time) []state.WindowID {
	var ids []state.WindowID
	for {
		t, ok := d.next()
		if !ok || t > now {
			return ids
		}
		top := heap.Pop(&d.h).(deadline)
		delete(d.at, top.win)
		ids = append(ids, parseWindowRef(top.win))
	}
}

// track records the window's processing-time deadline, if it has one.
func (g *TriggeredGroupByKey) track(w *trigWindow) {
	if !g.Trigger.HasProcessingTime() {
		return
	}
	if t, ok := g.Trigger.NextDeadline(&w.state); ok && !w.closed {
		g.deadlines.set(w.id, t)
		return
	}
	g.deadlines.remove(w.id)
}

// rebuild reads the deadlines of the windows already in the store.
func (g *TriggeredGroupByKey) rebuild() error {
	if !g.Trigger.HasProcessingTime() {
		return nil
	}
	return g.Windows.All(func(id state.WindowID, meta []byte) error {
		w, err := g.decode(id, meta)
		if err == nil {
			g.track(w)
		}
		return err
	})
}

// fireDue asks the trigger of every window whose processing-time deadline
// has come whether to fire.
func (g *TriggeredGroupByKey) fireDue(now mtime.Time) error {
	if !g.Trigger.HasProcessingTime() {
		return nil
	}
	ids := g.deadlines.due(now)
	sortIDs(ids)
	for _, id := range ids {
		if err := g.evaluate(id, now, false); err != nil {
			return err
		}
	}
	return nil
}

// ProcessingTime implements ProcessingTimer: a TestStream moved the job's
// processing time.
func (g *TriggeredGroupByKey) ProcessingTime(ctx context.Context, t mtime.Time) error {
	if err := g.init(); err != nil {
		return err
	}
	g.synthetic, g.pt = true, t
	if err := g.fireDue(t); err != nil {
		return err
	}
	if err := g.flush(ctx); err != nil {
		return err
	}
	return g.Out.ProcessingTime(ctx, t)
}

// NextWake implements Waker: the earliest processing-time deadline of an
// open window, unless a TestStream drives processing time.
func (g *TriggeredGroupByKey) NextWake() (time.Time, bool) {
	if g.synthetic || !g.Trigger.HasProcessingTime() {
		return time.Time{}, false
	}
	t, ok := g.deadlines.next()
	if !ok {
		return time.Time{}, false
	}
	return t.ToTime(), true
}

// Wake implements Waker.
func (g *TriggeredGroupByKey) Wake(ctx context.Context, now time.Time) error {
	if err := g.init(); err != nil {
		return err
	}
	if g.synthetic {
		return nil
	}
	if err := g.fireDue(mtime.FromTime(now)); err != nil {
		return err
	}
	return g.flush(ctx)
}
