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
	// DeleteMeta deletes the window but not its values, which a window
	// merged out of it took over (WindowID.Values).
	DeleteMeta(id state.WindowID) error
	// KeyWindows visits a key's windows whose last instant is at or after
	// from, latest first, until fn returns false.
	KeyWindows(kg int, key []byte, from mtime.Time, fn func(id state.WindowID, meta []byte) (bool, error)) error
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
	if id.Values != nil {
		id.Values = append([]byte(nil), id.Values...)
	}
	return id
}

// valueSet is the name of the window's value set (state.WindowID.Values).
func valueSet(id state.WindowID) []byte {
	if id.Values != nil {
		return id.Values
	}
	return id.Window
}

// Flags of a window's metadata record.
const (
	metaClosed    = 1 << iota // the trigger finished
	metaValuesSet             // the window's values are another's set, named next
)

// appendMeta encodes the window's metadata: flags, the name of its value
// set if it took another window's over (length-prefixed), fresh count, the
// two timestamps, the pane tracker (length-prefixed) and the trigger state.
func (w *trigWindow) appendMeta(b []byte) ([]byte, error) {
	var flags byte
	if w.closed {
		flags |= metaClosed
	}
	if w.id.Values != nil {
		flags |= metaValuesSet
	}
	b = append(b, flags)
	if w.id.Values != nil {
		b = binary.AppendUvarint(b, uint64(len(w.id.Values)))
		b = append(b, w.id.Values...)
	}
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
	r := metaReader{b: b}
	flags := r.byte()
	w.id.Values = nil
	if flags&metaValuesSet != 0 {
		w.id.Values = append([]byte{}, r.bytes(r.uvarint())...)
	}
	w.fresh = int64(r.uvarint())
	w.minTS, w.maxValTS = mtime.Time(r.varint()), mtime.Time(r.varint())
	panes := r.bytes(r.uvarint())
	if r.bad {
		return errMeta
	}
	w.closed = flags&metaClosed != 0
	if err := w.panes.UnmarshalBinary(panes); err != nil {
		return err
	}
	if err := w.state.UnmarshalBinary(r.b); err != nil {
		return err
	}
	return t.Check(&w.state)
}

// metaReader reads a metadata record; bad sticks once a read fails.
type metaReader struct {
	b   []byte
	bad bool
}

func (r *metaReader) byte() byte {
	if len(r.b) < 1 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *metaReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *metaReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *metaReader) bytes(n uint64) []byte {
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
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
