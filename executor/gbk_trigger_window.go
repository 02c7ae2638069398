package executor

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/triggers"
)

// TriggerWindows is where a TriggeredGroupByKey keeps its open windows, so
// they can exceed memory; *state.TriggerWindows implements it over the
// job's Pebble store. Per (key, window) it holds one metadata record (the
// operator's encoding of trigger state, panes and timestamps) and the
// window's values, and it finds windows by their last instant. Reads see
// earlier writes at once; Flush makes them durable. Callbacks must copy
// what they keep and must not write.
type TriggerWindows interface {
	Meta(id state.WindowID) ([]byte, error) // nil if the window is not open
	Create(id state.WindowID, meta []byte) error
	SetMeta(id state.WindowID, meta []byte) error
	Append(id state.WindowID, value []byte) error
	Values(id state.WindowID, fn func(v []byte) error) error
	ClearValues(id state.WindowID) error
	Delete(id state.WindowID) error
	// KeyWindows visits a key's windows in order of their last instant.
	KeyWindows(kg int, key []byte, fn func(id state.WindowID, meta []byte) error) error
	// Ending visits the windows whose last instant is in [lo, hi), in order.
	Ending(lo, hi mtime.Time, fn func(id state.WindowID) error) error
	// All visits every window, to rebuild what the operator keeps in memory.
	All(fn func(id state.WindowID, meta []byte) error) error
	Flush() error
}

// trigWindow is one (key, window) as the operator works on it: decoded
// from its metadata record, and written back when the operator is done.
type trigWindow struct {
	id              state.WindowID // its slices are owned
	fresh           int64          // values since the last pane
	minTS, maxValTS mtime.Time     // of the values since the last pane
	state           triggers.State
	panes           triggers.PaneTracker
	closed          bool // the trigger finished; later elements are dropped
	isNew           bool // not in the store yet
}

func ownID(id state.WindowID) state.WindowID {
	id.Key = append([]byte(nil), id.Key...)
	id.Window = append([]byte(nil), id.Window...)
	return id
}

// appendMeta encodes the window's metadata: flags, fresh count, the two
// timestamps, the pane tracker (length-prefixed) and the trigger state.
func (w *trigWindow) appendMeta(b []byte) ([]byte, error) {
	var flags byte
	if w.closed {
		flags |= 1
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(w.fresh))
	b = binary.AppendVarint(b, int64(w.minTS))
	b = binary.AppendVarint(b, int64(w.maxValTS))
	p, err := w.panes.AppendBinary(nil)
	if err != nil {
		return nil, err
	}
	b = binary.AppendUvarint(b, uint64(len(p)))
	b = append(b, p...)
	return w.state.AppendBinary(b)
}

var errMeta = errors.New("malformed window metadata")

func (w *trigWindow) decodeMeta(t *triggers.Trigger, b []byte) error {
	if len(b) < 1 {
		return errMeta
	}
	w.closed = b[0]&1 != 0
	b = b[1:]
	var vals [4]uint64
	for i := range vals {
		var n int
		if i == 1 || i == 2 {
			var v int64
			v, n = binary.Varint(b)
			vals[i] = uint64(v)
		} else {
			vals[i], n = binary.Uvarint(b)
		}
		if n <= 0 {
			return errMeta
		}
		b = b[n:]
	}
	w.fresh, w.minTS, w.maxValTS = int64(vals[0]), mtime.Time(int64(vals[1])), mtime.Time(int64(vals[2]))
	if vals[3] > uint64(len(b)) {
		return errMeta
	}
	if err := w.panes.UnmarshalBinary(b[:vals[3]]); err != nil {
		return err
	}
	if err := w.state.UnmarshalBinary(b[vals[3]:]); err != nil {
		return err
	}
	return t.Check(&w.state)
}

// load reads an open window; nil if it is not open.
func (g *TriggeredGroupByKey) load(id state.WindowID) (*trigWindow, error) {
	m, err := g.Windows.Meta(id)
	if err != nil || m == nil {
		return nil, g.wrap(err)
	}
	return g.decode(id, m)
}

func (g *TriggeredGroupByKey) decode(id state.WindowID, meta []byte) (*trigWindow, error) {
	w := &trigWindow{id: ownID(id)}
	if err := w.decodeMeta(g.Trigger, meta); err != nil {
		return nil, fmt.Errorf("group by key %s: window %x of key %x: %w", g.Name, id.Window, id.Key, err)
	}
	return w, nil
}

// open reads a window, or starts it if it is not open.
func (g *TriggeredGroupByKey) open(id state.WindowID) (*trigWindow, error) {
	w, err := g.load(id)
	if err != nil || w != nil {
		return w, err
	}
	return &trigWindow{id: ownID(id), state: g.Trigger.NewState(), isNew: true}, nil
}

// save writes the window's metadata back and keeps its processing-time
// deadline, if any.
func (g *TriggeredGroupByKey) save(w *trigWindow) error {
	var err error
	g.meta, err = w.appendMeta(g.meta[:0])
	if err != nil {
		return g.wrap(err)
	}
	if w.isNew {
		err = g.Windows.Create(w.id, g.meta)
		w.isNew = false
	} else {
		err = g.Windows.SetMeta(w.id, g.meta)
	}
	if err != nil {
		return g.wrap(err)
	}
	g.track(w)
	return nil
}

// forget deletes a window from the store and from the deadlines.
func (g *TriggeredGroupByKey) forget(id state.WindowID) error {
	g.deadlines.remove(id)
	return g.wrap(g.Windows.Delete(id))
}

func (g *TriggeredGroupByKey) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("group by key %s: %w", g.Name, err)
}
