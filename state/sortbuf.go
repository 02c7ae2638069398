package state

import (
	"bytes"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// sortBuffer gathers a shuffle's writes and hands them to Pebble in key
// order. Pebble's memtable is a skiplist whose inserter remembers where
// the previous key went; keys that arrive sorted are placed from there,
// a few steps each, while the random keys of a shuffle are each searched
// from the top of a list that is megabytes large (a third of the
// runner's CPU on a 1M-key combine). Sorting a few megabytes first costs
// far less than those searches.
type sortBuffer struct {
	arena []byte
	ents  []sortEntry
}

type sortEntry struct{ off, klen, vlen uint32 }

func (b *sortBuffer) add(k, v []byte) {
	b.ents = append(b.ents, sortEntry{uint32(len(b.arena)), uint32(len(k)), uint32(len(v))})
	b.arena = append(b.arena, k...)
	b.arena = append(b.arena, v...)
}

func (b *sortBuffer) size() int { return len(b.arena) }

func (b *sortBuffer) key(e sortEntry) []byte { return b.arena[e.off : e.off+e.klen] }

// batch returns the writes as a Pebble batch in key order and empties the
// buffer (keeping its memory).
func (b *sortBuffer) batch(db *pebble.DB) (*pebble.Batch, error) {
	slices.SortFunc(b.ents, func(x, y sortEntry) int { return bytes.Compare(b.key(x), b.key(y)) })
	pb := db.NewBatchWithSize(len(b.arena) + 8*len(b.ents))
	for _, e := range b.ents {
		k := b.key(e)
		if err := pb.Set(k, b.arena[e.off+e.klen:e.off+e.klen+e.vlen], nil); err != nil {
			pb.Close()
			return nil, err
		}
	}
	b.arena, b.ents = b.arena[:0], b.ents[:0]
	return pb, nil
}
