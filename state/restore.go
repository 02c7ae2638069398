package state

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Sequence counters. Shuffle buffers, user state and triggered windows
// number the records they append (bag entries, buffered values) with a
// counter kept in memory, so two appends to the same cell never share a
// key. A restored job imports the records into a fresh store; its
// operators must continue each counter past what the records use, or an
// append would overwrite a restored record. The operators carry the
// counter in their snapshot (executor.StateSnapshotter) and set it back
// here before their first write.

// Seq returns the shuffle's sequence counter.
func (sh *Shuffle) Seq() uint64 { return sh.seq }

// SetSeq sets the counter of a restored shuffle, and relearns which key
// groups hold records (Fire visits only those): call it before the first
// Add.
func (sh *Shuffle) SetSeq(seq uint64) error {
	sh.seq = max(sh.seq, seq)
	lo := append(append([]byte(nil), sh.ns...), byte(KindShuffle))
	hi := append(append([]byte(nil), sh.ns...), byte(KindShuffle)+1)
	it, err := sh.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("state: restore shuffle buffer: %w", err)
	}
	defer it.Close()
	for valid := it.SeekGE(lo); valid; {
		k := it.Key()
		if len(k) < len(lo)+2 {
			return fmt.Errorf("state: restore shuffle buffer: a %d-byte key", len(k))
		}
		kg := int(binary.BigEndian.Uint16(k[len(lo):]))
		sh.used[kg/8] |= 1 << (kg % 8)
		// Skip the rest of the key group: one seek per group, not a scan.
		valid = it.SeekGE(sh.groupEnd(nil, kg))
	}
	return it.Error()
}

// Seq returns the user state's sequence counter.
func (u *UserState) Seq() uint64 { return u.seq }

// SetSeq sets the counter of restored user state; call it before the
// first transaction.
func (u *UserState) SetSeq(seq uint64) { u.seq = max(u.seq, seq) }

// Seq returns the triggered windows' sequence counter.
func (w *TriggerWindows) Seq() uint64 { return w.seq }

// SetSeq sets the counter of restored triggered windows; call it before
// the first Append.
func (w *TriggerWindows) SetSeq(seq uint64) error {
	w.seq = max(w.seq, seq)
	return nil
}
