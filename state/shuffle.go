package state

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/cockroachdb/pebble/v2"
)

// Shuffle buffers the values of one group-by-key subtask until their
// windows close. It is not safe for concurrent use; each subtask has its
// own, under its own namespace.
type Shuffle struct {
	store *Store
	db    *pebble.DB
	ns    []byte
	batch *pebble.Batch
	seq   uint64
	used  [1 << 16 / 8]byte // bitset of key groups written
	key   []byte            // scratch
	val   []byte            // scratch
}

// NewShuffle returns the shuffle buffer of namespace ns (for example the
// stage and subtask).
func (s *Store) NewShuffle(ns string) *Shuffle {
	return &Shuffle{store: s, db: s.db, ns: append(binary.AppendUvarint(nil, uint64(len(ns))), ns...)}
}

func appendTime(b []byte, t mtime.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(int64(t)-math.MinInt64))
}

func (sh *Shuffle) groupPrefix(b []byte, kg int) []byte {
	b = append(b, sh.ns...)
	b = binary.BigEndian.AppendUint16(b, uint16(kg))
	return append(b, byte(KindShuffle))
}

// Add buffers a value of key in window, whose last instant is end.
// Writes become visible at the next Flush.
func (sh *Shuffle) Add(kg int, end mtime.Time, window, key []byte, ts mtime.Time, value []byte) error {
	if kg < 0 || kg >= 1<<16 {
		return fmt.Errorf("state: key group %d out of range", kg)
	}
	if sh.batch == nil {
		sh.batch = sh.db.NewBatch()
	}
	sh.used[kg/8] |= 1 << (kg % 8)
	sh.seq++
	k := sh.groupPrefix(sh.key[:0], kg)
	k = appendTime(k, end)
	k = binary.AppendUvarint(k, uint64(len(window)))
	k = append(k, window...)
	k = binary.AppendUvarint(k, uint64(len(key)))
	k = append(k, key...)
	k = binary.BigEndian.AppendUint64(k, sh.seq)
	v := appendTime(sh.val[:0], ts)
	v = append(v, value...)
	sh.key, sh.val = k, v
	if err := sh.batch.Set(k, v, nil); err != nil {
		return fmt.Errorf("state: buffer value: %w", err)
	}
	if sh.batch.Len() >= maxBatch {
		return sh.Flush()
	}
	return nil
}

// maxBatch bounds the bytes a shuffle buffer holds in a batch before it
// commits them to the store.
const maxBatch = 4 << 20

// Flush makes buffered writes visible.
func (sh *Shuffle) Flush() error {
	if sh.batch == nil {
		return nil
	}
	if err := sh.store.Err(); err != nil {
		return err
	}
	err := sh.batch.Commit(pebble.NoSync)
	sh.batch.Close()
	sh.batch = nil
	if err != nil {
		return fmt.Errorf("state: write shuffle buffer: %w", err)
	}
	return nil
}

// Group is one key's values in one window, as Fire hands them out. Its
// slices are valid only during the callback.
type Group struct {
	Window, Key  []byte
	End          mtime.Time
	Values       [][]byte
	MinTS, MaxTS mtime.Time
}

// Fire calls fn for every group whose window ends at or before wm, in
// window-end order within each key group, and deletes them.
func (sh *Shuffle) Fire(wm mtime.Time, fn func(g *Group) error) error {
	if err := sh.Flush(); err != nil {
		return err
	}
	var lo, hi []byte
	var g Group
	for kg := range 1 << 16 {
		if sh.used[kg/8]&(1<<(kg%8)) == 0 {
			continue
		}
		lo = sh.groupPrefix(lo[:0], kg)
		if wm >= mtime.EndOfGlobalWindowTime {
			hi = sh.groupPrefix(hi[:0], kg)
			hi[len(hi)-1]++ // the whole kind
		} else {
			hi = appendTime(sh.groupPrefix(hi[:0], kg), wm+1) // every end <= wm sorts below
		}
		n, err := sh.scan(lo, hi, &g, fn)
		if err != nil {
			return err
		}
		if n > 0 {
			if err := sh.db.DeleteRange(lo, hi, pebble.NoSync); err != nil {
				return fmt.Errorf("state: delete fired groups: %w", err)
			}
		}
	}
	return nil
}

func (sh *Shuffle) scan(lo, hi []byte, g *Group, fn func(*Group) error) (int, error) {
	it, err := sh.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, fmt.Errorf("state: scan shuffle buffer: %w", err)
	}
	defer it.Close()
	var cur []byte // the (end, window, key) part of the current group
	n := 0
	emit := func() error {
		if len(g.Values) == 0 {
			return nil
		}
		n++
		err := fn(g)
		g.Values = g.Values[:0]
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) < len(lo)+8+8 {
			return n, fmt.Errorf("state: malformed shuffle key %x", k)
		}
		id := k[len(lo) : len(k)-8]
		if cur == nil || string(id) != string(cur) {
			if err := emit(); err != nil {
				return n, err
			}
			cur = append(cur[:0], id...)
			if err := decodeGroupID(cur, g); err != nil {
				return n, err
			}
			g.MinTS, g.MaxTS = mtime.MaxTimestamp, mtime.MinTimestamp
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return n, fmt.Errorf("state: read shuffle value: %w", err)
		}
		if len(v) < 8 {
			return n, fmt.Errorf("state: malformed shuffle value for key %x", k)
		}
		ts := mtime.Time(int64(binary.BigEndian.Uint64(v)) + math.MinInt64)
		g.MinTS, g.MaxTS = min(g.MinTS, ts), max(g.MaxTS, ts)
		g.Values = append(g.Values, append([]byte(nil), v[8:]...))
	}
	if err := it.Error(); err != nil {
		return n, fmt.Errorf("state: scan shuffle buffer: %w", err)
	}
	return n, emit()
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
