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

// Record kinds of user state.
const (
	KindUserState Kind = 2 // ns|kind|kg|window|key|transform|state|type|...
	KindUserGC    Kind = 3 // ns|kind|expiry|window|key: where state lives, by expiry
)

// Types of user state cell, the byte after the state id.
const (
	cellBag      = 'b' // ...|seq → appended bytes
	cellMultimap = 'm' // ...|lp(mapKey)|seq → appended bytes
	cellOrdered  = 'o' // ...|sortKey|seq → one entry's value
)

// UserState holds the user state (bags, multimaps, ordered lists) of one
// stateful stage subtask, scoped by key and window. Reads and writes go
// through a Txn, one per bundle, so a failed bundle leaves no trace and a
// retried one sees the state as it was.
//
// A UserState is used by one goroutine at a time: its transactions and
// Collect are not safe to run concurrently.
type UserState struct {
	store *Store
	db    *pebble.DB
	ns    []byte
	seq   uint64
	// collected is the watermark Collect has deleted up to: no index
	// record expiring before it is left, unless an index write since then
	// lowered it. Collect scans the index from here rather than from the
	// namespace's start, which would read the tombstones of every earlier
	// collection again on each of many small watermark advances.
	collected mtime.Time
}

// NewUserState returns the user state of namespace ns (the stage and
// subtask). A restored UserState starts with nothing collected, so its
// first Collect scans the index from the start.
func (s *Store) NewUserState(ns string) *UserState {
	return &UserState{store: s, db: s.db, ns: append(binary.AppendUvarint(nil, uint64(len(ns))), ns...),
		collected: math.MinInt64}
}

// Cell names one piece of user state.
type Cell struct {
	KeyGroup  int
	Window    []byte // encoded window
	Key       []byte // encoded user key
	Transform string
	StateID   string
}

// Txn is one bundle's view of user state: it reads its own writes, and
// Commit applies them at once.
type Txn struct {
	u     *UserState
	batch *pebble.Batch
	gc    map[string]struct{} // window|key pairs already indexed in this txn
	buf   []byte
}

// Begin starts a transaction.
func (u *UserState) Begin() *Txn {
	return &Txn{u: u, batch: u.db.NewIndexedBatch(), gc: map[string]struct{}{}}
}

// Commit applies the transaction's writes.
func (t *Txn) Commit() error {
	if t.batch == nil {
		return errors.New("state: transaction already ended")
	}
	if t.batch.Empty() {
		t.Abort()
		return nil
	}
	b := t.batch
	t.batch = nil
	return t.u.store.commit(b, "commit user state")
}

// Abort discards the transaction's writes.
func (t *Txn) Abort() {
	if t.batch != nil {
		t.batch.Close()
		t.batch = nil
	}
}

func appendLP(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// scope returns the key prefix shared by every cell of (window, key).
func (u *UserState) scope(b []byte, kg int, window, key []byte) []byte {
	b = append(b, u.ns...)
	b = append(b, byte(KindUserState))
	b = binary.BigEndian.AppendUint16(b, uint16(kg))
	b = appendLP(b, window)
	return appendLP(b, key)
}

func (t *Txn) cellPrefix(c Cell, typ byte) []byte {
	b := t.u.scope(t.buf[:0], c.KeyGroup, c.Window, c.Key)
	b = appendLP(b, []byte(c.Transform))
	b = appendLP(b, []byte(c.StateID))
	b = append(b, typ)
	t.buf = b[:0]
	return bytes.Clone(b)
}

// prefixEnd returns the least key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func (t *Txn) nextSeq(b []byte) []byte {
	t.u.seq++
	return binary.BigEndian.AppendUint64(b, t.u.seq)
}

// index records that (window, key) holds state, under its expiry, so
// Collect finds it once the watermark passes.
func (t *Txn) index(c Cell, expiry mtime.Time) error {
	id := string(c.Window) + "\x00" + string(c.Key)
	if _, ok := t.gc[id]; ok {
		return nil
	}
	t.gc[id] = struct{}{}
	// State indexed behind what Collect has done (a late write to an
	// expired window) must still be found; an aborted transaction leaves
	// the mark lowered, which costs a longer scan, nothing more.
	t.u.collected = min(t.u.collected, expiry)
	b := append([]byte(nil), t.u.ns...)
	b = append(b, byte(KindUserGC))
	b = appendTime(b, expiry)
	b = appendLP(b, c.Window)
	b = appendLP(b, c.Key)
	b = binary.BigEndian.AppendUint16(b, uint16(c.KeyGroup))
	return t.batch.Set(b, nil, nil)
}

func (t *Txn) check() error {
	if t.batch == nil {
		return errors.New("state: transaction already ended")
	}
	return nil
}

// scan calls fn for each record in [lo, hi), seeing this txn's writes.
func (t *Txn) scan(lo, hi []byte, fn func(k, v []byte) error) error {
	it, err := t.batch.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("state: read user state: %w", err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("state: read user state: %w", err)
	}
	return nil
}

// BagRead returns a bag's appended bytes, in append order, concatenated.
func (t *Txn) BagRead(c Cell) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	p := t.cellPrefix(c, cellBag)
	var out []byte
	err := t.scan(p, prefixEnd(p), func(_, v []byte) error {
		out = append(out, v...)
		return nil
	})
	return out, err
}

// BagAppend appends encoded values to a bag without reading it.
func (t *Txn) BagAppend(c Cell, expiry mtime.Time, data []byte) error {
	if err := t.check(); err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	if err := t.index(c, expiry); err != nil {
		return err
	}
	return t.batch.Set(t.nextSeq(t.cellPrefix(c, cellBag)), data, nil)
}

// BagClear empties a bag.
func (t *Txn) BagClear(c Cell) error {
	if err := t.check(); err != nil {
		return err
	}
	p := t.cellPrefix(c, cellBag)
	return t.clearRange(p, prefixEnd(p))
}

// clearRange deletes the records in [lo, hi) with point deletions, or with
// one range deletion if there are more than maxPointDeletes, as Collect
// does. A range deletion in the transaction's indexed batch costs every
// later read of the bundle: each new iterator fragments all of the
// batch's range deletions again. A bundle over many keys of a value state
// (the SDKs write a value as clear-then-append) made that quadratic: 53%
// of the job server's CPU in the Nexmark winning-bids join.
func (t *Txn) clearRange(lo, hi []byte) error {
	var keys [][]byte
	over := false
	err := t.scan(lo, hi, func(k, _ []byte) error {
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
	if over {
		return t.batch.DeleteRange(lo, hi, nil)
	}
	for _, k := range keys {
		if err := t.batch.Delete(k, nil); err != nil {
			return fmt.Errorf("state: clear user state: %w", err)
		}
	}
	return nil
}

var errStopScan = errors.New("state: enough read")

func (t *Txn) mapPrefix(c Cell, mapKey []byte) []byte {
	return appendLP(t.cellPrefix(c, cellMultimap), mapKey)
}

// MultimapRead returns the values appended under one map key, concatenated.
func (t *Txn) MultimapRead(c Cell, mapKey []byte) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	p := t.mapPrefix(c, mapKey)
	var out []byte
	err := t.scan(p, prefixEnd(p), func(_, v []byte) error {
		out = append(out, v...)
		return nil
	})
	return out, err
}

// MultimapAppend appends encoded values under a map key.
func (t *Txn) MultimapAppend(c Cell, expiry mtime.Time, mapKey, data []byte) error {
	if err := t.check(); err != nil {
		return err
	}
	if err := t.index(c, expiry); err != nil {
		return err
	}
	// An empty append still creates the map key: set state adds keys with
	// no values.
	return t.batch.Set(t.nextSeq(t.mapPrefix(c, mapKey)), data, nil)
}

// MultimapClearKey removes a map key and its values.
func (t *Txn) MultimapClearKey(c Cell, mapKey []byte) error {
	if err := t.check(); err != nil {
		return err
	}
	p := t.mapPrefix(c, mapKey)
	return t.clearRange(p, prefixEnd(p))
}

// MultimapKeys returns every map key present, each as it was given,
// concatenated in key order.
func (t *Txn) MultimapKeys(c Cell) ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	p := t.cellPrefix(c, cellMultimap)
	var out, last []byte
	first := true
	err := t.scan(p, prefixEnd(p), func(k, _ []byte) error {
		n, w := binary.Uvarint(k[len(p):])
		if w <= 0 || len(k) < len(p)+w+int(n) {
			return fmt.Errorf("state: corrupt multimap record under %q", c.StateID)
		}
		mk := k[len(p)+w : len(p)+w+int(n)]
		if first || !bytes.Equal(mk, last) {
			out = append(out, mk...)
			last = append(last[:0], mk...)
			first = false
		}
		return nil
	})
	return out, err
}

// MultimapClear removes every map key.
func (t *Txn) MultimapClear(c Cell) error {
	if err := t.check(); err != nil {
		return err
	}
	p := t.cellPrefix(c, cellMultimap)
	return t.clearRange(p, prefixEnd(p))
}

const signBit = 1 << 63

func appendSortKey(b []byte, k int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(k)^signBit) // offset binary: orders like int64
}

// OrderedAppend adds one entry with sort key k.
func (t *Txn) OrderedAppend(c Cell, expiry mtime.Time, k int64, value []byte) error {
	if err := t.check(); err != nil {
		return err
	}
	if err := t.index(c, expiry); err != nil {
		return err
	}
	return t.batch.Set(t.nextSeq(appendSortKey(t.cellPrefix(c, cellOrdered), k)), value, nil)
}

// OrderedRead calls fn with each entry whose sort key is in [lo, hi), in
// sort-key order, entries of equal keys in append order.
func (t *Txn) OrderedRead(c Cell, lo, hi int64, fn func(k int64, value []byte) error) error {
	if err := t.check(); err != nil {
		return err
	}
	if lo >= hi {
		return nil
	}
	p := t.cellPrefix(c, cellOrdered)
	return t.scan(appendSortKey(bytes.Clone(p), lo), appendSortKey(bytes.Clone(p), hi), func(k, v []byte) error {
		if len(k) < len(p)+16 {
			return fmt.Errorf("state: corrupt ordered list record under %q", c.StateID)
		}
		sk := int64(binary.BigEndian.Uint64(k[len(p):]) ^ signBit)
		return fn(sk, v)
	})
}

// OrderedClear removes the entries whose sort key is in [lo, hi).
func (t *Txn) OrderedClear(c Cell, lo, hi int64) error {
	if err := t.check(); err != nil {
		return err
	}
	if lo >= hi {
		return nil
	}
	p := t.cellPrefix(c, cellOrdered)
	return t.clearRange(appendSortKey(bytes.Clone(p), lo), appendSortKey(bytes.Clone(p), hi))
}

// Collect deletes all state of every (window, key) whose expiry is before
// wm, and returns how many it deleted.
//
// It deletes with point deletions, except for a scope of more than
// maxPointDeletes records, which gets one range deletion. A watermark
// that advances often and by little (an aligned source moves it a poll at
// a time) collects a few scopes each time; a range deletion each time
// would pile up tombstones that every later iterator over the memtable
// must fragment again, until it is flushed.
func (u *UserState) Collect(wm mtime.Time) (int, error) {
	if err := u.store.Err(); err != nil {
		return 0, err
	}
	if wm <= u.collected {
		return 0, nil
	}
	b := u.db.NewBatch()
	n, err := u.collectInto(b, wm)
	if err != nil || n == 0 {
		b.Close()
		if err == nil {
			u.collected = wm
		}
		return n, err
	}
	if err := u.store.commit(b, "collect user state"); err != nil { // commit closes b
		return n, err
	}
	u.collected = wm
	return n, nil
}

// maxPointDeletes is the most records of one (window, key) scope Collect
// deletes one by one; a larger scope costs one range deletion, cheaper
// than many point deletions, and rare enough not to pile up.
const maxPointDeletes = 64

// collectInto adds to b the deletion of every index record expiring in
// [u.collected, wm) and of the state of its scope, and returns how many
// scopes it deleted.
func (u *UserState) collectInto(b *pebble.Batch, wm mtime.Time) (int, error) {
	gc := append(append([]byte(nil), u.ns...), byte(KindUserGC))
	idx, err := u.db.NewIter(&pebble.IterOptions{
		LowerBound: appendTime(bytes.Clone(gc), u.collected),
		UpperBound: appendTime(bytes.Clone(gc), wm),
	})
	if err != nil {
		return 0, fmt.Errorf("state: collect user state: %w", err)
	}
	defer idx.Close()
	var cells *pebble.Iterator // opened at the first expired scope: most calls find none
	defer func() {
		if cells != nil {
			cells.Close()
		}
	}()
	n := 0
	var keys [][]byte
	for valid := idx.First(); valid; valid = idx.Next() {
		win, rest, ok := cutLP(idx.Key()[len(gc)+8:])
		key, rest2, ok2 := cutLP(rest)
		if !ok || !ok2 || len(rest2) != 2 {
			return n, fmt.Errorf("state: corrupt user state index record")
		}
		if cells == nil {
			if cells, err = u.db.NewIter(nil); err != nil {
				return n, fmt.Errorf("state: collect user state: %w", err)
			}
		}
		p := u.scope(nil, int(binary.BigEndian.Uint16(rest2)), win, key)
		if keys, err = deleteScope(b, cells, p, keys[:0]); err != nil {
			return n, err
		}
		if err := b.Delete(idx.Key(), nil); err != nil {
			return n, fmt.Errorf("state: collect user state: %w", err)
		}
		n++
	}
	if err := idx.Error(); err != nil {
		return n, fmt.Errorf("state: collect user state: %w", err)
	}
	return n, nil
}

// deleteScope adds to b the deletion of every record with prefix p, read
// through it; keys is scratch space, returned for reuse.
func deleteScope(b *pebble.Batch, it *pebble.Iterator, p []byte, keys [][]byte) ([][]byte, error) {
	end := prefixEnd(p)
	// Bounds, not a seek and a prefix check: stepping past the scope's
	// last record would walk the tombstones of scopes deleted before it.
	it.SetBounds(p, end)
	for valid := it.First(); valid; valid = it.Next() {
		if len(keys) == maxPointDeletes {
			if err := b.DeleteRange(p, end, nil); err != nil {
				return keys, fmt.Errorf("state: collect user state: %w", err)
			}
			return keys, nil
		}
		keys = append(keys, bytes.Clone(it.Key()))
	}
	if err := it.Error(); err != nil {
		return keys, fmt.Errorf("state: collect user state: %w", err)
	}
	for _, k := range keys {
		if err := b.Delete(k, nil); err != nil {
			return keys, fmt.Errorf("state: collect user state: %w", err)
		}
	}
	return keys, nil
}

func cutLP(b []byte) (v, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return nil, nil, false
	}
	return b[w : w+int(n)], b[w+int(n):], true
}

// UserUsage is how much user state a store holds, over every namespace.
type UserUsage struct {
	Records int   // user state records (KindUserState)
	Bytes   int64 // their keys and values
	Scopes  int   // (window, key) scopes holding state: expiry index records
}

// UserUsage measures the user state in one scan of the whole store, where
// Usage and Count would take one scan per kind: a benchmark that samples
// a running job often pays for every scan in the job's CPU. For tests,
// benchmarks and diagnostics.
func (s *Store) UserUsage() (UserUsage, error) {
	s.closing.RLock()
	defer s.closing.RUnlock()
	if s.closed {
		return UserUsage{}, errors.New("state: user usage: the store is closed")
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		return UserUsage{}, fmt.Errorf("state: user usage: %w", err)
	}
	defer it.Close()
	var u UserUsage
	for valid := it.First(); valid; valid = it.Next() {
		key := it.Key()
		l, w := binary.Uvarint(key)
		if w <= 0 || uint64(len(key)-w) <= l {
			continue
		}
		switch Kind(key[w+int(l)]) {
		case KindUserState:
			u.Records++
			u.Bytes += int64(len(key) + len(it.Value()))
		case KindUserGC:
			u.Scopes++
		}
	}
	return u, it.Error()
}
