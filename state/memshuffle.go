package state

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// memGroups holds a shuffle's values in memory while they fit the store's
// shuffle memory (Options.ShuffleMemory), so that a shuffle fired whole
// (a bounded input's last watermark) never writes them to Pebble to read
// them back: on 2M small values over 1,000 keys, flushing the memtables to
// L0 and scanning them back was about half of the runner's CPU.
//
// A group's prefix (its store key without the sequence number) is kept
// once, with its values chained in the order they came; values and links
// live in fixed-size blocks, never moved, so the memory reserved is the
// memory held. Whatever cannot be fired from here (a partial fire, a
// barrier's flush, a group large enough to be held, memory running out)
// spills everything to the store first, where the shuffle carries on as
// if the values had been written there all along.
type memGroups struct {
	store *Store
	ns    *atomic.Int64    // the namespace's share of the store's shuffle memory
	index map[string]int32 // prefix -> run
	runs  []memRun
	ents  [][]memEnt // blocks of entBlock links
	vals  [][]byte   // blocks of valBlock bytes (a value longer gets its own)
	n     int32      // entries
	// reserved is what this shuffle holds of the store's shuffle memory;
	// minEnd and maxEnd the earliest and latest window end of any run;
	// maxRun the most value bytes of any run.
	reserved       int64
	minEnd, maxEnd mtime.Time
	maxRun         int
}

type memRun struct {
	prefix      string
	first, last int32
	bytes       int
}

type memEnt struct {
	block, off, n uint32
	next          int32
}

const (
	entBlock = 1 << 10 // links per block: 16 KiB
	// Value blocks double from minValBlock to valBlock bytes, so that a
	// shuffle of a few values holds little.
	minValBlock = 1 << 12
	valBlock    = 1 << 18
	// runCost approximates what a run costs beyond its prefix: its index
	// entry and slot.
	runCost = 64
)

func newMemGroups(s *Store, ns string) *memGroups {
	return &memGroups{store: s, ns: s.shuffleMemOf(ns), index: map[string]int32{}, minEnd: mtime.MaxTimestamp, maxEnd: mtime.MinTimestamp}
}

// add keeps ts and value in the run of prefix, or returns false, keeping
// nothing, when the store's shuffle memory cannot take them.
func (m *memGroups) add(prefix []byte, end, ts mtime.Time, value []byte) bool {
	r, ok := m.index[string(prefix)]
	if !ok && !m.reserve(int64(len(prefix)+runCost)) {
		return false
	}
	if int(m.n)%entBlock == 0 {
		if !m.reserve(entBlock * int64(unsafe.Sizeof(memEnt{}))) {
			return false
		}
		m.ents = append(m.ents, make([]memEnt, 0, entBlock))
	}
	size := 8 + len(value)
	last := len(m.vals) - 1
	if last < 0 || len(m.vals[last])+size > cap(m.vals[last]) {
		c := minValBlock
		if last >= 0 {
			c = min(2*cap(m.vals[last]), valBlock)
		}
		c = max(c, size)
		if !m.reserve(int64(c)) {
			return false
		}
		m.vals = append(m.vals, make([]byte, 0, c))
		last++
	}
	blk := m.vals[last]
	off := len(blk)
	blk = binary.BigEndian.AppendUint64(blk, uint64(int64(ts)-math.MinInt64))
	m.vals[last] = append(blk, value...)
	e := m.n
	m.n++
	m.ents[e/entBlock] = append(m.ents[e/entBlock], memEnt{block: uint32(last), off: uint32(off), n: uint32(size), next: -1})
	if ok {
		run := &m.runs[r]
		m.ent(run.last).next = e
		run.last = e
		run.bytes += len(value)
		m.maxRun = max(m.maxRun, run.bytes)
		return true
	}
	p := string(prefix)
	m.index[p] = int32(len(m.runs))
	m.runs = append(m.runs, memRun{prefix: p, first: e, last: e, bytes: len(value)})
	m.minEnd, m.maxEnd = min(m.minEnd, end), max(m.maxEnd, end)
	m.maxRun = max(m.maxRun, len(value))
	return true
}

func (m *memGroups) ent(i int32) *memEnt { return &m.ents[i/entBlock][i%entBlock] }

func (m *memGroups) value(e *memEnt) []byte { return m.vals[e.block][e.off : e.off+e.n] }

func (m *memGroups) reserve(n int64) bool {
	if !m.store.reserveShuffleMemory(n) {
		return false
	}
	m.reserved += n
	m.ns.Add(n)
	return true
}

func (m *memGroups) empty() bool { return len(m.runs) == 0 }

// sorted returns the runs in key order: key group, window end, window,
// key, as the store keeps them.
func (m *memGroups) sorted() []memRun {
	slices.SortFunc(m.runs, func(a, b memRun) int { return cmp.Compare(a.prefix, b.prefix) })
	clear(m.index) // the slots moved
	return m.runs
}

// each calls fn with the run's values (timestamp, then value) in the order
// they came.
func (m *memGroups) each(r memRun, fn func(v []byte) error) error {
	for i := r.first; i >= 0; {
		e := m.ent(i)
		if err := fn(m.value(e)); err != nil {
			return err
		}
		i = e.next
	}
	return nil
}

// release returns the memory to the store and forgets everything.
func (m *memGroups) release() {
	m.store.releaseShuffleMemory(m.reserved)
	m.ns.Add(-m.reserved)
	clear(m.index)
	*m = memGroups{store: m.store, ns: m.ns, index: m.index, minEnd: mtime.MaxTimestamp, maxEnd: mtime.MinTimestamp}
}

// fireMem fires every group held in memory, in the order Fire scans the
// store, and forgets them. The store holds none of the shuffle's records,
// so no key group is left to visit.
func (sh *Shuffle) fireMem(fn func(*Group) error) error {
	m := sh.mem
	defer m.release()
	at := len(sh.ns) + 1 + 2 // namespace, kind, key group
	var g Group
	for _, r := range m.sorted() {
		sh.cur = append(sh.cur[:0], r.prefix...)
		if err := decodeGroupID(sh.cur[at:], &g); err != nil {
			return err
		}
		g.Values, g.Rest = g.Values[:0], nil
		g.MinTS, g.MaxTS = mtime.MaxTimestamp, mtime.MinTimestamp
		m.each(r, func(v []byte) error {
			ts := decodeTime(v)
			g.MinTS, g.MaxTS = min(g.MinTS, ts), max(g.MaxTS, ts)
			g.Values = append(g.Values, v[8:])
			return nil
		})
		if err := fn(&g); err != nil {
			return err
		}
	}
	clear(sh.used[:])
	return nil
}
