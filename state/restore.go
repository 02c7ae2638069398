package state

import (
	"bytes"
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
	return sh.learnStored()
}

// learnStored marks the key groups the store holds records of for this
// shuffle (a restore imported them), and has the shuffle keep its values in
// the store if there are any. It runs once, before the shuffle first reads
// or writes.
func (sh *Shuffle) learnStored() error {
	if sh.learned {
		return nil
	}
	sh.learned = true
	lo := append(append([]byte(nil), sh.ns...), byte(KindShuffle))
	hi := append(append([]byte(nil), sh.ns...), byte(KindShuffle)+1)
	it, err := sh.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("state: restore shuffle buffer: %w", err)
	}
	defer it.Close()
	found := false
	for valid := it.SeekGE(lo); valid; {
		k := it.Key()
		if len(k) < len(lo)+2 {
			return fmt.Errorf("state: restore shuffle buffer: a %d-byte key", len(k))
		}
		kg := int(binary.BigEndian.Uint16(k[len(lo):]))
		sh.used[kg/8] |= 1 << (kg % 8)
		found = true
		// Skip the rest of the key group: one seek per group, not a scan.
		valid = it.SeekGE(sh.groupEnd(nil, kg))
	}
	if err := it.Error(); err != nil || !found {
		return err
	}
	// Held in the store: the shuffle goes on there (sh.mem's rule).
	return sh.spill()
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

// HeldRanges returns the store key ranges, [start, end), of the groups
// this shuffle fired and still holds for consumers that have not released
// them. A checkpoint records them: the groups were fired before the
// barrier, so their consumers read them before theirs, and a restored
// shuffle must not fire them again (DropRanges).
func (sh *Shuffle) HeldRanges() [][2][]byte {
	var out [][2][]byte
	for _, h := range sh.held {
		if !h.released.Load() {
			out = append(out, [2][]byte{h.start, h.end})
		}
	}
	return out
}

// DropRanges deletes what was left of held groups in a restored store
// (see HeldRanges). Ranges outside the shuffle's namespace are refused.
func (sh *Shuffle) DropRanges(ranges [][2][]byte) error {
	if len(ranges) == 0 {
		return nil
	}
	b := sh.db.NewBatch()
	for _, r := range ranges {
		if !bytes.HasPrefix(r[0], sh.ns) || !bytes.HasPrefix(r[1], sh.ns) || bytes.Compare(r[0], r[1]) >= 0 {
			b.Close()
			return fmt.Errorf("state: restore shuffle buffer: held range %x..%x is not one of its groups", r[0], r[1])
		}
		if err := b.DeleteRange(r[0], r[1], nil); err != nil {
			b.Close()
			return fmt.Errorf("state: restore shuffle buffer: %w", err)
		}
	}
	return sh.store.commit(b, "drop held groups of a restored shuffle")
}
