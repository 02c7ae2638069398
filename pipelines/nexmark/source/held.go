package source

import (
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/pipelines/nexmark/generator"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// heldQueue is one call's events held back for a later row, earliest
// release first. It lives only as long as the call: a call that starts at
// row s finds the events held across s with HeldBefore, and each held
// event is emitted by the call that processes its release row, whichever
// restriction that row ended up in.
type heldQueue struct {
	g    *generator.Generator
	held []generator.Held // sorted by Release
}

func newHeldQueue(g *generator.Generator, r Restriction) *heldQueue {
	q := &heldQueue{g: g}
	if !g.DelaysOn() {
		return q
	}
	for i := r.GenLo; i < r.GenHi; i++ {
		for _, h := range g.HeldBefore(i, r.Start) {
			q.add(h)
		}
	}
	return q
}

func (q *heldQueue) add(h generator.Held) {
	k := sort.Search(len(q.held), func(j int) bool { return q.held[j].Release > h.Release })
	q.held = append(q.held, generator.Held{})
	copy(q.held[k+1:], q.held[k:])
	q.held[k] = h
}

// emitRow emits the held events released at row n, then row n's own
// events of generators lo to hi that are not held back.
func (q *heldQueue) emitRow(lo, hi int, n int64, emit func(beam.EventTime, model.Event)) {
	k := 0
	for ; k < len(q.held) && q.held[k].Release <= n; k++ {
		e, ts := q.g.Event(q.held[k].Gen, q.held[k].N)
		emit(mtime.FromMilliseconds(ts), e)
	}
	q.held = q.held[k:]
	for i := lo; i < hi; i++ {
		if n >= q.g.Count(i) {
			continue
		}
		if r, held := q.g.Release(i, n); held {
			q.add(generator.Held{Gen: i, N: n, Release: r})
			continue
		}
		e, ts := q.g.Event(i, n)
		emit(mtime.FromMilliseconds(ts), e)
	}
}
