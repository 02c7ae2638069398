package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/cockroachdb/pebble/v2"
)

// HoldOptions make Fire hold large groups in the store instead of handing
// out all their values (held.go).
type HoldOptions struct {
	// Above is the bytes of values a group hands out inline; Fire holds
	// the rest. Zero holds nothing.
	Above int
	// Readers is how many consumers release each held group: one per edge
	// the group travels on.
	Readers int
	// Timestamps makes Fire read a held group to its end, so that MinTS and
	// MaxTS cover every value. Without it they cover the inline values,
	// and Fire skips to the group's last key, never reading the rest.
	Timestamps bool
}

// Hold sets how Fire holds large groups; call it before the first Fire.
func (sh *Shuffle) Hold(o HoldOptions) {
	if o.Readers <= 0 {
		o.Above = 0
	}
	sh.hold = o
}

// HeldStats counts what a shuffle's held groups went through.
type HeldStats struct {
	Groups   int64 // groups Fire held
	Pages    int64 // pages consumers read from them
	Released int64 // groups every consumer released
}

// HeldStats returns the shuffle's counts so far; it is safe to call from
// any goroutine.
func (sh *Shuffle) HeldStats() HeldStats {
	return HeldStats{Groups: sh.groupsHeld.Load(), Pages: sh.pages.Load(), Released: sh.releases.Load()}
}

// holdRest holds the values of g from the one the iterator is at to the
// group's end, sets g.Rest to their token and moves the iterator past the
// group.
func (sh *Shuffle) holdRest(it *pebble.Iterator, g *Group) (bool, error) {
	prefix := sh.cur
	lo := seqOf(it.Key())
	hi := lo
	ok := true
	if sh.hold.Timestamps {
		for ; ok && inGroup(it.Key(), prefix); ok = it.Next() {
			ts, _, err := shuffleValue(it)
			if err != nil {
				return false, err
			}
			g.MinTS, g.MaxTS = min(g.MinTS, ts), max(g.MaxTS, ts)
			hi = seqOf(it.Key())
		}
	} else {
		// Every key of the group sorts below prefix + 9 0xff bytes.
		last := append(bytes.Clone(prefix), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		if !it.SeekLT(last) || !inGroup(it.Key(), prefix) {
			return false, fmt.Errorf("state: held group %x lost its last value: %w", prefix, it.Error())
		}
		hi = seqOf(it.Key())
		ok = it.Next()
	}
	h := newHold(sh, prefix, lo, hi, sh.hold.Readers)
	g.Rest = sh.store.holds.add(h)
	sh.fresh = append(sh.fresh, h)
	sh.groupsHeld.Add(1)
	return ok, nil
}

func seqOf(k []byte) uint64 { return binary.BigEndian.Uint64(k[len(k)-8:]) }

// heldAt returns the held group whose keys include k, or nil.
func (sh *Shuffle) heldAt(k []byte) *hold {
	i := sort.Search(len(sh.held), func(i int) bool { return bytes.Compare(sh.held[i].start, k) > 0 }) - 1
	if i >= 0 && bytes.Compare(k, sh.held[i].end) < 0 {
		return sh.held[i]
	}
	return nil
}

// addHeld moves the groups the last scan held into sh.held.
func (sh *Shuffle) addHeld() {
	if len(sh.fresh) == 0 {
		return
	}
	sh.held = append(sh.held, sh.fresh...)
	sh.fresh = sh.fresh[:0]
	slices.SortFunc(sh.held, func(a, b *hold) int { return bytes.Compare(a.start, b.start) })
}

// pruneHeld forgets the groups every consumer released. Release deleted
// their values before marking them, so scans that start after this see
// none of them.
func (sh *Shuffle) pruneHeld() {
	sh.held = slices.DeleteFunc(sh.held, func(h *hold) bool { return h.released.Load() })
}

// deleteFired deletes what a Fire scanned in [lo, hi), except the held
// groups: one range deletion per gap between them.
func (sh *Shuffle) deleteFired(lo, hi []byte) error {
	from := lo
	i := sort.Search(len(sh.held), func(i int) bool { return bytes.Compare(sh.held[i].start, lo) >= 0 })
	for ; i < len(sh.held) && bytes.Compare(sh.held[i].start, hi) < 0; i++ {
		h := sh.held[i]
		if bytes.Compare(from, h.start) < 0 {
			if err := sh.db.DeleteRange(from, h.start, pebble.NoSync); err != nil {
				return fmt.Errorf("state: delete fired groups: %w", err)
			}
		}
		from = h.end
	}
	if bytes.Compare(from, hi) < 0 {
		if err := sh.db.DeleteRange(from, hi, pebble.NoSync); err != nil {
			return fmt.Errorf("state: delete fired groups: %w", err)
		}
	}
	return nil
}
