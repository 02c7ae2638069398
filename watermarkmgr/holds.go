package watermarkmgr

import (
	"container/heap"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// HoldID names a hold. The caller picks the scheme, for example
// "bundle/17" for a bundle's pending elements or the encoded key, window
// and timer id of a timer's output timestamp.
type HoldID string

type hold struct {
	id    HoldID
	t     mtime.Time
	index int // position in holdHeap
}

// holds is an indexed min-heap: the earliest hold in O(1), and adding,
// moving or releasing any hold by id in O(log n), because an SDK stage may
// hold once per pending timer.
type holds struct {
	byID map[HoldID]*hold
	heap holdHeap
}

func (h *holds) set(id HoldID, t mtime.Time) {
	if x, ok := h.byID[id]; ok {
		if x.t != t {
			x.t = t
			heap.Fix(&h.heap, x.index)
		}
		return
	}
	if h.byID == nil {
		h.byID = make(map[HoldID]*hold)
	}
	x := &hold{id: id, t: t}
	h.byID[id] = x
	heap.Push(&h.heap, x)
}

func (h *holds) release(id HoldID) bool {
	x, ok := h.byID[id]
	if !ok {
		return false
	}
	delete(h.byID, id)
	heap.Remove(&h.heap, x.index)
	return true
}

func (h *holds) get(id HoldID) (mtime.Time, bool) {
	x, ok := h.byID[id]
	if !ok {
		return 0, false
	}
	return x.t, true
}

// min returns the earliest hold, or +inf when there is none.
func (h *holds) min() mtime.Time {
	if len(h.heap) == 0 {
		return mtime.MaxTimestamp
	}
	return h.heap[0].t
}

func (h *holds) len() int { return len(h.heap) }

// holdHeap implements heap.Interface; only holds touches it.
type holdHeap []*hold

func (q holdHeap) Len() int           { return len(q) }
func (q holdHeap) Less(i, j int) bool { return q[i].t < q[j].t }
func (q holdHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = i
	q[j].index = j
}

func (q *holdHeap) Push(x any) {
	h := x.(*hold)
	h.index = len(*q)
	*q = append(*q, h)
}

func (q *holdHeap) Pop() any {
	old := *q
	n := len(old)
	h := old[n-1]
	old[n-1] = nil // let the hold be collected
	*q = old[:n-1]
	return h
}
