package triggers

import "github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

// OnMerge returns the trigger state of a window made by merging windows
// whose states are ss (the new element's own window included, with a fresh
// state); c describes the merged window. The rules are Beam's
// (TriggerStateMachine.onMerge):
//
//   - AfterCount finishes if it finished in any merged window; otherwise the
//     counts add. Always adds its counts too.
//   - A processing-time trigger finishes if it finished in any window;
//     otherwise its deadline is the earliest armed one.
//   - AfterWatermark alone is finished only if it finished in every window
//     and the watermark has passed the merged window's end: a window that
//     grew past the watermark can fire on time again. With early or late
//     firings it is in its late phase only if every window was and the
//     watermark has passed the end; otherwise it is back in its early phase,
//     the early states merged and the late one cleared.
//   - Composites merge their subtriggers, then decide their own finish as
//     they do on firing: AfterAll when all are finished, AfterAny and
//     OrFinally when any is, AfterEach when the last is; an AfterEach merges
//     its subtriggers in order up to the first unfinished one and clears
//     the rest.
//
// ss must hold states of t; none is modified.
func (t *Trigger) OnMerge(ss []*State, c Context) State {
	out := t.NewState()
	if len(ss) == 0 {
		return out
	}
	t.onMerge(ss, &out, 0, c)
	return out
}

func (t *Trigger) onMerge(ss []*State, out *State, i int, c Context) {
	n, ns := &t.nodes[i], &out.nodes[i]
	switch n.kind {
	case KindDefault, KindNever:
	case KindAlways:
		ns.count = sumCounts(ss, i)
	case KindCount:
		if finishedInAny(ss, i) {
			ns.finished = true
			return
		}
		ns.count = sumCounts(ss, i)
	case KindProcTime, KindSyncProcTime:
		if finishedInAny(ss, i) {
			ns.finished = true
			return
		}
		ns.armed, ns.deadline = earliestDeadline(ss, i)
	case KindRepeat:
		t.onMerge(ss, out, n.subs[0], c)
	case KindAfterAll, KindAfterAny, KindOrFinally:
		t.onMergeComposite(ss, out, i, c)
	case KindAfterEach:
		prior := true
		for _, sub := range n.subs {
			if prior {
				t.onMerge(ss, out, sub, c)
				prior = out.nodes[sub].finished
			} else {
				t.clear(out, sub)
			}
		}
		_, unfinished := t.current(out, i)
		ns.finished = !unfinished
	case KindEndOfWindow:
		t.onMergeEndOfWindow(ss, out, i, c)
	}
}

func (t *Trigger) onMergeComposite(ss []*State, out *State, i int, c Context) {
	n := &t.nodes[i]
	all, any := true, false
	for _, sub := range n.subs {
		t.onMerge(ss, out, sub, c)
		f := out.nodes[sub].finished
		all, any = all && f, any || f
	}
	if n.kind == KindAfterAll {
		out.nodes[i].finished = all
	} else {
		out.nodes[i].finished = any
	}
}

// onMergeEndOfWindow: the node's armed flag is its late phase.
func (t *Trigger) onMergeEndOfWindow(ss []*State, out *State, i int, c Context) {
	n, ns := &t.nodes[i], &out.nodes[i]
	late := c.PastEndOfWindow()
	for _, s := range ss {
		late = late && s.nodes[i].armed
	}
	if !late {
		if n.early >= 0 {
			t.onMerge(ss, out, n.early, c)
		}
		if n.late >= 0 {
			t.clear(out, n.late)
		}
		return
	}
	ns.armed = true
	ns.finished = n.late < 0
	if n.late >= 0 {
		t.onMerge(ss, out, n.late, c)
	}
}

func finishedInAny(ss []*State, i int) bool {
	for _, s := range ss {
		if s.nodes[i].finished {
			return true
		}
	}
	return false
}

func sumCounts(ss []*State, i int) int64 {
	var n int64
	for _, s := range ss {
		n += s.nodes[i].count
	}
	return n
}

func earliestDeadline(ss []*State, i int) (bool, mtime.Time) {
	armed, d := false, mtime.MaxTimestamp
	for _, s := range ss {
		if ns := s.nodes[i]; ns.armed {
			armed, d = true, min(d, ns.deadline)
		}
	}
	if !armed {
		return false, 0
	}
	return true, d
}
