package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/cockroachdb/pebble/v2"
)

// Record kinds of triggered windows.
const (
	// KindTriggerWindow holds a window's metadata and its values:
	//	ns|kind|kg|'m'|lp(key)|end|window → metadata (the caller's encoding)
	//	ns|kind|kg|'v'|lp(key)|lp(window)|seq → one value
	KindTriggerWindow Kind = 4
	// KindTriggerIndex finds windows by their last instant:
	//	ns|kind|end|kg|lp(key)|window → empty
	KindTriggerIndex Kind = 5
)

const (
	subMeta  = 'm'
	subValue = 'v'
)

// WindowID names one (key, window) of a triggered group.
type WindowID struct {
	KeyGroup int
	End      mtime.Time // the window's last instant
	Key      []byte     // encoded key
	Window   []byte     // encoded window
}

// TriggerWindows holds the open windows of one triggered group-by-key
// subtask: per (key, window) one small metadata record the caller encodes
// (trigger state, panes, timestamps), its values as blind appends, and an
// index by the window's last instant, so the windows a watermark reaches are
// one range scan away and no scan ever reads every window.
//
// Writes go to an indexed batch that reads see at once; Flush commits it.
// Nothing needs the writes to be atomic: a group-by-key does not retry.
// It is not safe for concurrent use; each subtask has its own namespace.
type TriggerWindows struct {
	store *Store
	db    *pebble.DB
	ns    []byte
	batch *pebble.Batch
	seq   uint64
	buf   []byte
}

// NewTriggerWindows returns the triggered windows of namespace ns (the
// stage and subtask).
func (s *Store) NewTriggerWindows(ns string) *TriggerWindows {
	return &TriggerWindows{store: s, db: s.db, ns: appendLP(nil, []byte(ns))}
}

func (w *TriggerWindows) b() *pebble.Batch {
	if w.batch == nil {
		w.batch = w.db.NewIndexedBatch()
	}
	return w.batch
}

func (w *TriggerWindows) keyPrefix(b []byte, sub byte, kg int, key []byte) []byte {
	b = append(b, w.ns...)
	b = append(b, byte(KindTriggerWindow))
	b = binary.BigEndian.AppendUint16(b, uint16(kg))
	b = append(b, sub)
	return appendLP(b, key)
}

func (w *TriggerWindows) metaKey(b []byte, id WindowID) []byte {
	b = w.keyPrefix(b, subMeta, id.KeyGroup, id.Key)
	b = appendTime(b, id.End)
	return append(b, id.Window...)
}

func (w *TriggerWindows) valuePrefix(b []byte, id WindowID) []byte {
	return appendLP(w.keyPrefix(b, subValue, id.KeyGroup, id.Key), id.Window)
}

func (w *TriggerWindows) indexKey(b []byte, id WindowID) []byte {
	b = append(b, w.ns...)
	b = append(b, byte(KindTriggerIndex))
	b = appendTime(b, id.End)
	b = binary.BigEndian.AppendUint16(b, uint16(id.KeyGroup))
	b = appendLP(b, id.Key)
	return append(b, id.Window...)
}

func checkID(id WindowID) error {
	if id.KeyGroup < 0 || id.KeyGroup >= 1<<16 {
		return fmt.Errorf("state: key group %d out of range", id.KeyGroup)
	}
	return nil
}

// Meta returns a copy of the window's metadata, or nil if it has none.
func (w *TriggerWindows) Meta(id WindowID) ([]byte, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	w.buf = w.metaKey(w.buf[:0], id)
	v, closer, err := w.b().Get(w.buf)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state: read window metadata: %w", err)
	}
	defer closer.Close()
	return append(make([]byte, 0, len(v)), v...), nil
}

// Create writes a new window's metadata and indexes it.
func (w *TriggerWindows) Create(id WindowID, meta []byte) error {
	if err := w.SetMeta(id, meta); err != nil {
		return err
	}
	w.buf = w.indexKey(w.buf[:0], id)
	if err := w.b().Set(w.buf, nil, nil); err != nil {
		return fmt.Errorf("state: index window: %w", err)
	}
	return w.maybeFlush()
}

// SetMeta replaces a window's metadata. meta must not be empty.
func (w *TriggerWindows) SetMeta(id WindowID, meta []byte) error {
	if err := checkID(id); err != nil {
		return err
	}
	if len(meta) == 0 {
		return errors.New("state: empty window metadata")
	}
	w.buf = w.metaKey(w.buf[:0], id)
	if err := w.b().Set(w.buf, meta, nil); err != nil {
		return fmt.Errorf("state: write window metadata: %w", err)
	}
	return w.maybeFlush()
}

// Append adds a value to the window without reading anything.
func (w *TriggerWindows) Append(id WindowID, value []byte) error {
	if err := checkID(id); err != nil {
		return err
	}
	w.seq++
	w.buf = binary.BigEndian.AppendUint64(w.valuePrefix(w.buf[:0], id), w.seq)
	if err := w.b().Set(w.buf, value, nil); err != nil {
		return fmt.Errorf("state: append window value: %w", err)
	}
	return w.maybeFlush()
}

// Values calls fn with each of the window's values in append order. The
// slice is valid only during the call; fn must not write to w.
func (w *TriggerWindows) Values(id WindowID, fn func(v []byte) error) error {
	p := w.valuePrefix(nil, id)
	return w.scan(p, prefixEnd(p), func(_, v []byte) error { return fn(v) })
}

// ClearValues removes the window's values and keeps its metadata: with
// point deletions when there are at most maxPointDeletes, as a user state
// transaction clears a cell (userstate.go), since every range deletion in
// the pending batch is fragmented again by each later read of it.
func (w *TriggerWindows) ClearValues(id WindowID) error {
	p := bytes.Clone(w.valuePrefix(w.buf[:0], id))
	var keys [][]byte
	over := false
	err := w.scan(p, prefixEnd(p), func(k, _ []byte) error {
		if len(keys) == maxPointDeletes {
			over = true
			return errStopScan
		}
		keys = append(keys, bytes.Clone(k))
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return err
	}
	b := w.b()
	if over {
		err = b.DeleteRange(p, prefixEnd(p), nil)
	}
	for _, k := range keys {
		if err != nil || over {
			break
		}
		err = b.Delete(k, nil)
	}
	if err != nil {
		return fmt.Errorf("state: clear window values: %w", err)
	}
	return w.maybeFlush()
}

// Delete removes the window: metadata, values and index entry.
func (w *TriggerWindows) Delete(id WindowID) error {
	if err := w.ClearValues(id); err != nil {
		return err
	}
	b := w.b()
	if err := b.Delete(w.metaKey(nil, id), nil); err != nil {
		return fmt.Errorf("state: delete window: %w", err)
	}
	if err := b.Delete(w.indexKey(nil, id), nil); err != nil {
		return fmt.Errorf("state: delete window: %w", err)
	}
	return w.maybeFlush()
}

// KeyWindows calls fn with each window of key and its metadata, in order of
// their last instant. The slices are valid only during the call; fn must
// not write to w.
func (w *TriggerWindows) KeyWindows(kg int, key []byte, fn func(id WindowID, meta []byte) error) error {
	if err := checkID(WindowID{KeyGroup: kg}); err != nil {
		return err
	}
	p := w.keyPrefix(nil, subMeta, kg, key)
	return w.scan(p, prefixEnd(p), func(k, v []byte) error {
		if len(k) < len(p)+8 {
			return fmt.Errorf("state: corrupt window metadata key %x", k)
		}
		return fn(WindowID{KeyGroup: kg, End: decodeTime(k[len(p):]), Key: key, Window: k[len(p)+8:]}, v)
	})
}

// Ending calls fn with each window whose last instant is in [lo, hi), in
// order of that instant. The slices are valid only during the call; fn
// must not write to w.
func (w *TriggerWindows) Ending(lo, hi mtime.Time, fn func(id WindowID) error) error {
	if lo >= hi {
		return nil
	}
	p := append(append([]byte(nil), w.ns...), byte(KindTriggerIndex))
	return w.scan(appendTime(bytes.Clone(p), lo), appendTime(bytes.Clone(p), hi), func(k, _ []byte) error {
		id, err := decodeIndexKey(k[len(p):])
		if err != nil {
			return err
		}
		return fn(id)
	})
}

// All calls fn with every window and its metadata, for rebuilding what a
// caller keeps in memory. The slices are valid only during the call; fn
// must not write to w.
func (w *TriggerWindows) All(fn func(id WindowID, meta []byte) error) error {
	return w.Ending(mtime.MinTimestamp, mtime.MaxTimestamp+1, func(id WindowID) error {
		m, err := w.Meta(id)
		if err != nil || m == nil {
			return err
		}
		return fn(id, m)
	})
}

func decodeIndexKey(k []byte) (WindowID, error) {
	if len(k) < 10 {
		return WindowID{}, fmt.Errorf("state: corrupt window index key %x", k)
	}
	id := WindowID{End: decodeTime(k), KeyGroup: int(binary.BigEndian.Uint16(k[8:]))}
	key, win, ok := cutLP(k[10:])
	if !ok {
		return WindowID{}, fmt.Errorf("state: corrupt window index key %x", k)
	}
	id.Key, id.Window = key, win
	return id, nil
}

func (w *TriggerWindows) scan(lo, hi []byte, fn func(k, v []byte) error) error {
	it, err := w.b().NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("state: read windows: %w", err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("state: read windows: %w", err)
	}
	return nil
}

func (w *TriggerWindows) maybeFlush() error {
	if w.batch.Len() < maxBatch {
		return nil
	}
	return w.Flush()
}

// Flush commits the writes made since the last Flush.
func (w *TriggerWindows) Flush() error {
	if w.batch == nil {
		return nil
	}
	b := w.batch
	w.batch = nil
	if b.Empty() {
		b.Close()
		return nil
	}
	return w.store.commit(b, "write windows")
}

func decodeTime(b []byte) mtime.Time {
	return mtime.Time(int64(binary.BigEndian.Uint64(b)) + math.MinInt64)
}
