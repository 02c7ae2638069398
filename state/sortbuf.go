package state

import (
	"bytes"
	"slices"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
)

// sortBuffer gathers a shuffle's writes and hands them to Pebble in key
// order. Pebble's memtable is a skiplist whose inserter remembers where
// the previous key went; keys that arrive sorted are placed from there,
// a few steps each, while the random keys of a shuffle are each searched
// from the top of a list that is megabytes large (a third of the
// runner's CPU on a 1M-key combine). Sorting a few megabytes first costs
// far less than those searches.
//
// A shuffle's keys come in runs: the values of one key in one window
// share a prefix (key group, window end, window, key) and differ only in
// a sequence number that grows as they come. So the buffer sorts runs,
// not writes: add chains a write to the run of its prefix, found in a map,
// and batch sorts the runs' prefixes and walks each run in the order it
// came. Sorting every write compared long shared prefixes byte by byte,
// log n times a write (over a third of the runner's CPU on 2M small
// integers grouped over 1,000 keys).
type sortBuffer struct {
	arena []byte
	ents  []sortEntry
	runs  []sortRun
	// index finds a prefix's run. Its keys are strings over the arena's
	// bytes (unsafe.String, no copy): bytes once written are never
	// changed, and a backing array the arena outgrew stays alive while a
	// string points into it; the index is cleared before the arena is
	// reused.
	index map[string]int32
}

type sortEntry struct {
	off, klen, vlen uint32
	next            int32 // the next write of the run, or -1
}

type sortRun struct {
	off, plen   uint32 // the prefix, in the arena
	first, last int32
}

// add buffers the write of v at k. The writes of k's first plen bytes
// must come in key order: the caller vouches that the rest of k grows
// from one write of a prefix to the next, and that no prefix of a run is
// a prefix of another's (as length-prefixed fields are not).
func (b *sortBuffer) add(k, v []byte, plen int) {
	e := int32(len(b.ents))
	off := uint32(len(b.arena))
	b.ents = append(b.ents, sortEntry{off: off, klen: uint32(len(k)), vlen: uint32(len(v)), next: -1})
	b.arena = append(b.arena, k...)
	b.arena = append(b.arena, v...)
	if b.index == nil {
		b.index = map[string]int32{}
	}
	if r, ok := b.index[string(k[:plen])]; ok {
		b.ents[b.runs[r].last].next = e
		b.runs[r].last = e
		return
	}
	b.index[unsafe.String(&b.arena[off], plen)] = int32(len(b.runs))
	b.runs = append(b.runs, sortRun{off: off, plen: uint32(plen), first: e, last: e})
}

func (b *sortBuffer) size() int { return len(b.arena) }

func (b *sortBuffer) prefix(r sortRun) []byte { return b.arena[r.off : r.off+r.plen] }

// batch returns the writes as a Pebble batch in key order and empties the
// buffer (keeping its memory).
func (b *sortBuffer) batch(db *pebble.DB) (*pebble.Batch, error) {
	slices.SortFunc(b.runs, func(x, y sortRun) int { return bytes.Compare(b.prefix(x), b.prefix(y)) })
	pb := db.NewBatchWithSize(len(b.arena) + 8*len(b.ents))
	for _, r := range b.runs {
		for i := r.first; i >= 0; i = b.ents[i].next {
			e := b.ents[i]
			k := b.arena[e.off : e.off+e.klen]
			if err := pb.Set(k, b.arena[e.off+e.klen:e.off+e.klen+e.vlen], nil); err != nil {
				pb.Close()
				b.reset()
				return nil, err
			}
		}
	}
	b.reset()
	return pb, nil
}

func (b *sortBuffer) reset() {
	clear(b.index)
	b.arena, b.ents, b.runs = b.arena[:0], b.ents[:0], b.runs[:0]
}
