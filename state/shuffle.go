package state

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime/debug"
	"sync/atomic"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
)

// Shuffle buffers the values of one group-by-key subtask until their
// windows close. It is not safe for concurrent use; each subtask has its
// own, under its own namespace.
type Shuffle struct {
	store *Store
	db    *pebble.DB
	ns    []byte
	buf   sortBuffer // writes not yet committed
	// mem holds the values while they fit in memory (memshuffle.go); nil
	// once they spilled to the store, for the rest of the shuffle's life.
	// While it is set, the store holds none of this shuffle's records.
	mem *memGroups
	// learned says learnStored ran (restore.go).
	learned bool
	seq     uint64
	used    [1 << 16 / 8]byte // bitset of key groups written
	key     []byte            // scratch
	val     []byte            // scratch
	cur     []byte            // scratch: the store key prefix of the group being read

	hold HoldOptions
	// held are the groups this shuffle holds for consumers, sorted by
	// start key; fresh are those held by the running scan. Only the
	// shuffle's goroutine touches the slices; consumers mark a hold
	// released, and the next Fire forgets it.
	held, fresh []*hold
	// Counters for HeldStats, which any goroutine may call.
	groupsHeld, pages, releases atomic.Int64
}

// NewShuffle returns the shuffle buffer of namespace ns (for example the
// stage and subtask).
func (s *Store) NewShuffle(ns string) *Shuffle {
	sh := &Shuffle{store: s, db: s.db, ns: append(binary.AppendUvarint(nil, uint64(len(ns))), ns...)}
	if s.shuffleMemLimit > 0 {
		sh.mem = newMemGroups(s, ns)
	}
	return sh
}

func appendTime(b []byte, t mtime.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(int64(t)-math.MinInt64))
}

// groupPrefix starts the keys of a key group's shuffle records:
// namespace | kind | key group, like every kind of record.
func (sh *Shuffle) groupPrefix(b []byte, kg int) []byte {
	b = append(b, sh.ns...)
	b = append(b, byte(KindShuffle))
	return binary.BigEndian.AppendUint16(b, uint16(kg))
}

// groupEnd is the least key after every record of key group kg.
func (sh *Shuffle) groupEnd(b []byte, kg int) []byte {
	if kg < 1<<16-1 {
		return sh.groupPrefix(b, kg+1)
	}
	b = append(b, sh.ns...)
	return append(b, byte(KindShuffle)+1)
}

// Add buffers a value of key in window, whose last instant is end.
// Writes become visible at the next Flush.
func (sh *Shuffle) Add(kg int, end mtime.Time, window, key []byte, ts mtime.Time, value []byte) error {
	if kg < 0 || kg >= 1<<16 {
		return fmt.Errorf("state: key group %d out of range", kg)
	}
	if err := sh.learnStored(); err != nil {
		return err
	}
	sh.used[kg/8] |= 1 << (kg % 8)
	if sh.mem != nil {
		sh.key = sh.recordPrefix(sh.key[:0], kg, end, window, key)
		if sh.mem.add(sh.key, end, ts, value) {
			return nil
		}
		if err := sh.spill(); err != nil {
			return err
		}
	}
	sh.seq++
	k := binary.BigEndian.AppendUint64(sh.recordPrefix(sh.key[:0], kg, end, window, key), sh.seq)
	v := appendTime(sh.val[:0], ts)
	v = append(v, value...)
	sh.key, sh.val = k, v
	// A value's run is its key's in its window: what precedes the
	// sequence number, which grows.
	return sh.buffer(k, v)
}

// buffer adds the record k, v to the sort buffer, committing it when full.
func (sh *Shuffle) buffer(k, v []byte) error {
	sh.buf.add(k, v, len(k)-8)
	if sh.buf.size() >= maxBatch {
		return sh.commit()
	}
	return nil
}

// recordPrefix is the store key of a shuffle record but its last part:
// key group, window end, window, key. A sequence number follows, which
// keeps the values of a key in the order they came.
func (sh *Shuffle) recordPrefix(b []byte, kg int, end mtime.Time, window, key []byte) []byte {
	b = sh.groupPrefix(b, kg)
	b = appendTime(b, end)
	b = binary.AppendUvarint(b, uint64(len(window)))
	b = append(b, window...)
	b = binary.AppendUvarint(b, uint64(len(key)))
	return append(b, key...)
}

// spill writes the values held in memory to the store, numbered in the
// order each group's came, and has the shuffle write there from now on.
// They go in as one table (Store.ingest), sorted here: written through the
// memtables, they would be held twice at once.
func (sh *Shuffle) spill() error {
	m := sh.mem
	if m == nil {
		return nil
	}
	sh.mem = nil
	large := m.reserved >= spillCollect
	defer func() {
		m.release()
		if large {
			// The blocks are garbage now, but the heap's next collection
			// was set when they were live, and the runtime gives pages
			// back to the system slowly: until then they would still take
			// their memory beside the memtables the data that follows
			// fills (a 1M-value group-by-key peaked 50 MB higher).
			debug.FreeOSMemory()
		}
	}()
	if m.empty() {
		return nil
	}
	return sh.store.ingest(func(w *sstable.Writer) error {
		for _, r := range m.sorted() {
			err := m.each(r, func(v []byte) error {
				sh.seq++
				sh.key = binary.BigEndian.AppendUint64(append(sh.key[:0], r.prefix...), sh.seq)
				return w.Set(sh.key, v)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// spillCollect is the memory from which a spill collects the heap.
const spillCollect = 16 << 20

// maxBatch bounds the bytes a shuffle buffer holds in a batch before it
// commits them to the store.
const maxBatch = 4 << 20

// Flush writes everything added to the store, where a snapshot sees it;
// values held in memory spill.
func (sh *Shuffle) Flush() error {
	if err := sh.spill(); err != nil {
		return err
	}
	return sh.commit()
}

// commit makes the sort buffer's writes visible.
func (sh *Shuffle) commit() error {
	if sh.buf.size() == 0 {
		return nil
	}
	b, err := sh.buf.batch(sh.db)
	if err != nil {
		return fmt.Errorf("state: buffer values: %w", err)
	}
	return sh.store.commit(b, "write shuffle buffer")
}

// Group is one key's values in one window, as Fire hands them out. Its
// slices are valid only during the callback.
type Group struct {
	Window, Key  []byte
	End          mtime.Time
	Values       [][]byte
	MinTS, MaxTS mtime.Time
	// Rest, when set, is the token of the group's values after Values,
	// which Fire left in the store for consumers to read (held.go).
	Rest []byte
}

// Fire calls fn for every group whose window's last instant is before wm
// (Beam's rule: a window is complete once the watermark passes its maximum
// timestamp; at it, an element of that timestamp may still come), in
// window-end order within each key group, and deletes them, except the
// held ones, which their consumers release.
func (sh *Shuffle) Fire(wm mtime.Time, fn func(g *Group) error) error {
	if err := sh.learnStored(); err != nil {
		return err
	}
	if m := sh.mem; m != nil {
		switch {
		case m.empty() || m.minEnd >= wm:
			return nil // nothing due, and the store holds none of this shuffle
		case m.maxEnd < wm && (sh.hold.Above == 0 || m.maxRun <= sh.hold.Above):
			return sh.fireMem(fn)
		}
		// Part of it is due, or a group is large enough to be held: the
		// store does both.
	}
	if err := sh.Flush(); err != nil {
		return err
	}
	sh.pruneHeld()
	var lo, hi []byte
	var g Group
	for kg := range 1 << 16 {
		if sh.used[kg/8]&(1<<(kg%8)) == 0 {
			continue
		}
		lo = sh.groupPrefix(lo[:0], kg)
		if wm > mtime.EndOfGlobalWindowTime {
			hi = sh.groupEnd(hi[:0], kg) // the whole key group
		} else {
			hi = appendTime(sh.groupPrefix(hi[:0], kg), wm) // every end < wm sorts below
		}
		n, err := sh.scan(lo, hi, &g, fn)
		if err != nil {
			return err
		}
		if n > 0 {
			if err := sh.deleteFired(lo, hi); err != nil {
				return err
			}
		}
	}
	return nil
}

// scan fires the groups in [lo, hi), skipping those held from earlier
// fires, and returns how many it fired.
func (sh *Shuffle) scan(lo, hi []byte, g *Group, fn func(*Group) error) (int, error) {
	it, err := sh.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, fmt.Errorf("state: scan shuffle buffer: %w", err)
	}
	defer it.Close()
	// Groups held by this scan join sh.held when it ends: the lookups of
	// heldAt below need it sorted, and none of them lies ahead.
	defer sh.addHeld()
	n := 0
	for ok := it.First(); ok; {
		k := it.Key()
		if len(k) < len(lo)+8+8 {
			return n, fmt.Errorf("state: malformed shuffle key %x", k)
		}
		if h := sh.heldAt(k); h != nil {
			ok = it.SeekGE(h.end)
			continue
		}
		if ok, err = sh.group(it, len(lo), g); err != nil {
			return n, err
		}
		n++
		if err := fn(g); err != nil {
			return n, err
		}
	}
	if err := it.Error(); err != nil {
		return n, fmt.Errorf("state: scan shuffle buffer: %w", err)
	}
	return n, nil
}

// group reads into g the group whose first value the iterator is at, and
// moves the iterator past it; at is where the group's id starts in a key.
// A group whose values exceed the hold threshold keeps the rest in the
// store, and g.Rest is their token.
func (sh *Shuffle) group(it *pebble.Iterator, at int, g *Group) (bool, error) {
	k := it.Key()
	sh.cur = append(sh.cur[:0], k[:len(k)-8]...)
	prefix := sh.cur
	if err := decodeGroupID(prefix[at:], g); err != nil {
		return false, err
	}
	g.Values, g.Rest = g.Values[:0], nil
	g.MinTS, g.MaxTS = mtime.MaxTimestamp, mtime.MinTimestamp
	size := 0
	ok := true
	for ; ok && inGroup(it.Key(), prefix); ok = it.Next() {
		ts, v, err := shuffleValue(it)
		if err != nil {
			return false, err
		}
		if sh.hold.Above > 0 && len(g.Values) > 0 && size+len(v) > sh.hold.Above {
			return sh.holdRest(it, g)
		}
		g.MinTS, g.MaxTS = min(g.MinTS, ts), max(g.MaxTS, ts)
		g.Values = append(g.Values, append([]byte(nil), v...))
		size += len(v)
	}
	return ok, nil
}

// inGroup reports whether k is a value of the group whose keys start with
// prefix. Group ids are length-delimited, so no other group's keys share
// the prefix.
func inGroup(k, prefix []byte) bool {
	return len(k) == len(prefix)+8 && string(k[:len(prefix)]) == string(prefix)
}

// shuffleValue reads the value the iterator is at: its timestamp, then the
// value as it was added.
func shuffleValue(it *pebble.Iterator) (mtime.Time, []byte, error) {
	v, err := it.ValueAndErr()
	if err != nil {
		return 0, nil, fmt.Errorf("state: read shuffle value: %w", err)
	}
	if len(v) < 8 {
		return 0, nil, fmt.Errorf("state: malformed shuffle value for key %x", it.Key())
	}
	return mtime.Time(int64(binary.BigEndian.Uint64(v)) + math.MinInt64), v[8:], nil
}

func decodeGroupID(id []byte, g *Group) error {
	if len(id) < 8 {
		return fmt.Errorf("state: malformed group id %x", id)
	}
	g.End = mtime.Time(int64(binary.BigEndian.Uint64(id)) + math.MinInt64)
	rest := id[8:]
	wl, n := binary.Uvarint(rest)
	if n <= 0 || uint64(len(rest)-n) < wl {
		return fmt.Errorf("state: malformed group id %x", id)
	}
	g.Window = rest[n : n+int(wl)]
	rest = rest[n+int(wl):]
	kl, n := binary.Uvarint(rest)
	if n <= 0 || uint64(len(rest)-n) != kl {
		return fmt.Errorf("state: malformed group id %x", id)
	}
	g.Key = rest[n:]
	return nil
}
