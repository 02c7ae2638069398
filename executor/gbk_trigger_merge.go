package executor

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/triggers"
	"github.com/weir-runner/weir/wire"
)

var errNotInterval = errors.New("merging windows need interval windows")

// session is one of a key's open session windows, read for merging.
type session struct {
	id   state.WindowID
	meta []byte
}

// mergeInto returns the window an element of session window id belongs to:
// the key's windows that id meets, directly or through others, merged into
// their span, or id's own window when it meets none. A key's open windows
// never intersect, because each element merges them at once, as Beam's
// ReduceFnRunner does. A merged window's trigger state comes from
// Trigger.OnMerge over the members' states and a fresh one for the element's
// own window; its panes continue from the member that fired the most; its
// values are the members' values.
func (g *TriggeredGroupByKey) mergeInto(id state.WindowID, now mtime.Time) (*trigWindow, error) {
	start, end, err := wire.DecodeIntervalWindow(id.Window)
	if err != nil {
		return nil, fmt.Errorf("group by key %s: %w: %w", g.Name, errNotInterval, err)
	}
	var open []session
	var ivs []triggers.Interval
	// Only windows that end at or after the element's window starts can
	// meet it. Open windows never meet each other, so every window before
	// one that starts at or before the element's ends before the element
	// starts: the visit stops there, in a growing session at the first.
	err = g.Windows.KeyWindows(id.KeyGroup, id.Key, start, func(wid state.WindowID, meta []byte) (bool, error) {
		s, e, err := wire.DecodeIntervalWindow(wid.Window)
		if err != nil {
			return false, fmt.Errorf("%w: %w", errNotInterval, err)
		}
		open = append(open, session{id: ownID(wid), meta: slices.Clone(meta)})
		ivs = append(ivs, triggers.Interval{Start: s, End: e})
		return s > start, nil
	})
	if err != nil {
		return nil, g.wrap(err)
	}
	ivs = append(ivs, triggers.Interval{Start: start, End: end})
	self := len(ivs) - 1
	for _, m := range triggers.MergeSessions(ivs) {
		if !slices.Contains(m.Members, self) {
			continue
		}
		members := m.Members[:len(m.Members)-1] // self is the largest index
		switch {
		case len(members) == 0:
			return g.open(id)
		case len(members) == 1 && ivs[members[0]] == m.Window:
			return g.decode(open[members[0]].id, open[members[0]].meta)
		}
		var ws []session
		for _, i := range members {
			ws = append(ws, open[i])
		}
		return g.merge(id, m.Window, ws, now)
	}
	return nil, fmt.Errorf("group by key %s: window %x lost in merging", g.Name, id.Window)
}

// merge makes the window span out of the open windows ws and the element's
// own new window, merging their state. Its values are the set of the member
// with the most values since its last pane, taken over by name, and the
// other members' values moved into it: a session that each element extends
// moves nothing, where copying its values at every element made a long
// session cost the square of its length.
func (g *TriggeredGroupByKey) merge(id state.WindowID, span triggers.Interval, ws []session, now mtime.Time) (*trigWindow, error) {
	w := &trigWindow{isNew: true, id: state.WindowID{KeyGroup: id.KeyGroup, End: span.MaxTimestamp(),
		Key: append([]byte(nil), id.Key...), Window: wire.AppendIntervalWindow(nil, span.Start, span.End)}}
	fresh := g.Trigger.NewState()
	states := []*triggers.State{&fresh}
	var panes []triggers.PaneTracker
	members := make([]*trigWindow, len(ws))
	keep := 0
	for i, s := range ws {
		m, err := g.decode(s.id, s.meta)
		if err != nil {
			return nil, err
		}
		members[i] = m
		if m.fresh > members[keep].fresh {
			keep = i
		}
		states = append(states, &m.state)
		panes = append(panes, m.panes)
		if m.fresh > 0 {
			if w.fresh == 0 {
				w.minTS, w.maxValTS = m.minTS, m.maxValTS
			}
			w.minTS, w.maxValTS = min(w.minTS, m.minTS), max(w.maxValTS, m.maxValTS)
			w.fresh += m.fresh
		}
	}
	w.id.Values = slices.Clone(valueSet(members[keep].id))
	if bytes.Equal(w.id.Values, w.id.Window) {
		w.id.Values = nil
	}
	var values [][]byte
	for i, m := range members {
		if i == keep {
			g.deadlines.remove(m.id)
			if err := g.Windows.DeleteMeta(m.id); err != nil {
				return nil, g.wrap(err)
			}
			continue
		}
		err := g.Windows.Values(m.id, func(v []byte) error {
			values = append(values, slices.Clone(v))
			return nil
		})
		if err != nil {
			return nil, g.wrap(err)
		}
		if err := g.forget(m.id); err != nil {
			return nil, err
		}
	}
	w.state = g.Trigger.OnMerge(states, g.ctx(w, now))
	w.panes = triggers.MergePanes(panes)
	w.closed = w.state.Finished()
	for _, v := range values {
		if err := g.Windows.Append(w.id, v); err != nil {
			return nil, g.wrap(err)
		}
	}
	return w, nil
}
