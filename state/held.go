package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// A held group is a fired group whose values, past its first few, stay in
// the store after Fire: the consumer was handed a token for them (a Beam
// state-backed iterable) instead of the values, and reads them page by
// page while its bundle runs. A group too large for memory then never is
// in memory, on either side. The group stays until every consumer released
// it, after the bundle that read it committed; a retried bundle reads it
// again from the start.

// ErrReleased is returned for a token whose group is gone: every consumer
// released it, or it never existed in this store.
var ErrReleased = errors.New("state: the held group was released or never existed")

// TokenLen is the length of every held group's token.
const TokenLen = 9

// tokenTag starts every token, so a stray byte string is not mistaken for
// one by accident.
const tokenTag = 'H'

// hold is one held group: the store keys prefix+seq for seq in [lo, hi],
// which are [start, end).
type hold struct {
	sh         *Shuffle
	prefix     []byte // namespace, key group, kind, end, window, key
	lo, hi     uint64 // sequence numbers, inclusive
	start, end []byte
	refs       int // consumers that have not released it; under holdTable.mu
	released   atomic.Bool
}

func newHold(sh *Shuffle, prefix []byte, lo, hi uint64, refs int) *hold {
	h := &hold{sh: sh, prefix: bytes.Clone(prefix), lo: lo, hi: hi, refs: refs}
	h.start = binary.BigEndian.AppendUint64(bytes.Clone(prefix), lo)
	h.end = binary.BigEndian.AppendUint64(bytes.Clone(prefix), hi+1)
	return h
}

// holdTable maps the tokens of a store's held groups to them.
type holdTable struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]*hold
}

func (t *holdTable) add(h *hold) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[uint64]*hold{}
	}
	t.next++
	t.m[t.next] = h
	return binary.BigEndian.AppendUint64([]byte{tokenTag}, t.next)
}

func tokenID(token []byte) (uint64, error) {
	if len(token) != TokenLen || token[0] != tokenTag {
		return 0, fmt.Errorf("state: %x is not a held group's token", token)
	}
	return binary.BigEndian.Uint64(token[1:]), nil
}

func (t *holdTable) get(token []byte) (*hold, error) {
	id, err := tokenID(token)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.m[id]
	if !ok {
		return nil, fmt.Errorf("%w (token %x)", ErrReleased, token)
	}
	return h, nil
}

// release drops one claim on the held group of token, and forgets the
// group with the last one.
func (t *holdTable) release(token []byte) (h *hold, last bool, err error) {
	id, err := tokenID(token)
	if err != nil {
		return nil, false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.m[id]
	if !ok {
		return nil, false, fmt.Errorf("%w (token %x)", ErrReleased, token)
	}
	h.refs--
	if h.refs > 0 {
		return h, false, nil
	}
	delete(t.m, id)
	return h, true, nil
}

// Held reports how many groups this store holds for consumers now.
func (s *Store) Held() int {
	s.holds.mu.Lock()
	defer s.holds.mu.Unlock()
	return len(s.holds.m)
}

// ReadHeld returns a page of a held group's values, concatenated as
// encoded: from the start when cont is empty, else from where the page
// that returned cont ended. A page holds at least max bytes unless it is
// the last; next is empty after the last page.
func (s *Store) ReadHeld(token, cont []byte, max int) (page, next []byte, err error) {
	h, err := s.holds.get(token)
	if err != nil {
		return nil, nil, err
	}
	from := h.lo
	if len(cont) > 0 {
		if len(cont) != 8 {
			return nil, nil, fmt.Errorf("state: malformed continuation %x of held group %x", cont, token)
		}
		from = binary.BigEndian.Uint64(cont)
		if from < h.lo || from > h.hi {
			return nil, nil, fmt.Errorf("state: continuation %d out of held group %x's range [%d, %d]", from, token, h.lo, h.hi)
		}
	}
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: binary.BigEndian.AppendUint64(bytes.Clone(h.prefix), from), UpperBound: h.end})
	if err != nil {
		return nil, nil, fmt.Errorf("state: read held group: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if len(page) >= max {
			k := it.Key()
			next = bytes.Clone(k[len(k)-8:])
			break
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, nil, fmt.Errorf("state: read held group: %w", err)
		}
		if len(v) < 8 {
			return nil, nil, fmt.Errorf("state: malformed shuffle value in held group %x", token)
		}
		page = append(page, v[8:]...)
	}
	if err := it.Error(); err != nil {
		return nil, nil, fmt.Errorf("state: read held group: %w", err)
	}
	h.sh.pages.Add(1)
	return page, next, nil
}

// EachHeld calls fn with each value of a held group, in order, as
// encoded; fn must not keep the slice. A checkpoint that must keep an
// element naming the group reads it whole this way (a token does not
// outlive the process; see executor.Detacher).
func (s *Store) EachHeld(token []byte, fn func(value []byte) error) error {
	h, err := s.holds.get(token)
	if err != nil {
		return err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: h.start, UpperBound: h.end})
	if err != nil {
		return fmt.Errorf("state: read held group: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("state: read held group: %w", err)
		}
		if len(v) < 8 {
			return fmt.Errorf("state: malformed shuffle value in held group %x", token)
		}
		if err := fn(v[8:]); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("state: read held group: %w", err)
	}
	return nil
}

// Release gives up one consumer's claim on a held group; the last one
// deletes it. Releasing more often than the group has consumers is an
// error, as is releasing an unknown token.
func (s *Store) Release(token []byte) error {
	h, last, err := s.holds.release(token)
	if err != nil || !last {
		return err
	}
	// Delete before marking it released: the shuffle skips the group until
	// it sees the mark, so no scan that can still see its values fires it.
	if err := s.db.DeleteRange(h.start, h.end, pebble.NoSync); err != nil {
		return fmt.Errorf("state: delete released group: %w", err)
	}
	h.released.Store(true)
	h.sh.releases.Add(1)
	return nil
}
