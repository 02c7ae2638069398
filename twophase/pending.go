package twophase

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/state"
)

// Pending is one sink subtask's uncommitted output, by epoch, in the
// job's store. It keeps it as user state of the sink's namespace (an
// ordered list keyed by epoch, and a cell for the sealed barrier), so
// store snapshots and restores carry it like any other state. It is used
// from the subtask's goroutine only.
type Pending struct {
	us   *state.UserState
	name string // names the sink in errors
}

// The cells of a sink's namespace. One key group: a sink's output is not
// keyed, and the namespace is the subtask's own.
var (
	recordsCell  = state.Cell{Transform: "weir:sink", StateID: "pending"}
	preparedCell = state.Cell{Transform: "weir:sink", StateID: "prepared"}
	sealedCell   = state.Cell{Transform: "weir:sink", StateID: "sealed"}
	runCell      = state.Cell{Transform: "weir:sink", StateID: "run"}
)

// NewPending returns the pending output kept under namespace ns (the sink
// subtask's, see the runner's stage namespaces); name names the sink in
// errors.
func NewPending(store *state.Store, ns, name string) *Pending {
	return &Pending{us: store.NewUserState(ns), name: name}
}

// never is the expiry of pending output: the watermark never collects it,
// only a commit does.
const never = mtime.MaxTimestamp

// Append adds values to epoch, in order, in one store write.
func (p *Pending) Append(epoch executor.BarrierID, values [][]byte) error {
	t := p.us.Begin()
	for _, v := range values {
		if err := t.OrderedAppend(recordsCell, never, int64(epoch), v); err != nil {
			t.Abort()
			return fmt.Errorf("sink %s: keep epoch %d: %w", p.name, epoch, err)
		}
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("sink %s: keep epoch %d: %w", p.name, epoch, err)
	}
	return nil
}

// Seal records that barrier id passed: every epoch below id is sealed.
// The next snapshot holds it, so a restored sink knows which checkpoint
// its store is (Sealed).
func (p *Pending) Seal(id executor.BarrierID) error {
	t := p.us.Begin()
	err := t.BagClear(sealedCell)
	if err == nil {
		err = t.BagAppend(sealedCell, never, binary.BigEndian.AppendUint64(nil, uint64(id)))
	}
	if err == nil {
		err = t.Commit()
	} else {
		t.Abort()
	}
	if err != nil {
		return fmt.Errorf("sink %s: seal at barrier %d: %w", p.name, id, err)
	}
	return nil
}

// Sealed returns the newest barrier sealed; 0 for a fresh store.
func (p *Pending) Sealed() (executor.BarrierID, error) {
	t := p.us.Begin()
	defer t.Abort()
	b, err := t.BagRead(sealedCell)
	if err != nil {
		return 0, fmt.Errorf("sink %s: read sealed barrier: %w", p.name, err)
	}
	switch len(b) {
	case 0:
		return 0, nil
	case 8:
		return executor.BarrierID(binary.BigEndian.Uint64(b)), nil
	}
	return 0, fmt.Errorf("sink %s: sealed barrier record of %d bytes", p.name, len(b))
}

// Lineage returns the token of the sink's line of runs: random, made at
// the first call on a fresh store and kept in it, so a restored sink has
// the lineage of the run it restores (Session.Lineage).
func (p *Pending) Lineage() (string, error) {
	t := p.us.Begin()
	defer t.Abort()
	b, err := t.BagRead(runCell)
	if err != nil {
		return "", fmt.Errorf("sink %s: read lineage token: %w", p.name, err)
	}
	if len(b) > 0 {
		return string(b), nil
	}
	tok, err := NewToken()
	if err != nil {
		return "", fmt.Errorf("sink %s: make lineage token: %w", p.name, err)
	}
	if err := t.BagAppend(runCell, never, []byte(tok)); err != nil {
		return "", fmt.Errorf("sink %s: keep lineage token: %w", p.name, err)
	}
	if err := t.Commit(); err != nil {
		return "", fmt.Errorf("sink %s: keep lineage token: %w", p.name, err)
	}
	return tok, nil
}

// NewToken returns a random token of 16 hexadecimal digits.
func NewToken() (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(r[:]), nil
}

// Read calls fn with every value of the epochs in [lo, hi), epoch by
// epoch, each in append order. fn must not keep v after it returns.
func (p *Pending) Read(lo, hi executor.BarrierID, fn func(epoch executor.BarrierID, v []byte) error) error {
	t := p.us.Begin()
	defer t.Abort()
	err := t.OrderedRead(recordsCell, int64(lo), int64(hi), func(k int64, v []byte) error {
		return fn(executor.BarrierID(k), v)
	})
	if err != nil {
		return fmt.Errorf("sink %s: read epochs [%d, %d): %w", p.name, lo, hi, err)
	}
	return nil
}

// Prepare keeps the committable of epoch, prepared by run.
func (p *Pending) Prepare(epoch executor.BarrierID, run string, committable []byte) error {
	v := binary.AppendUvarint(nil, uint64(len(run)))
	v = append(append(v, run...), committable...)
	t := p.us.Begin()
	if err := t.OrderedAppend(preparedCell, never, int64(epoch), v); err != nil {
		t.Abort()
		return fmt.Errorf("sink %s: keep committable of epoch %d: %w", p.name, epoch, err)
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("sink %s: keep committable of epoch %d: %w", p.name, epoch, err)
	}
	return nil
}

// Prepared returns the committables of the epochs in [lo, hi), in epoch
// order.
func (p *Pending) Prepared(lo, hi executor.BarrierID) ([]Committable, error) {
	t := p.us.Begin()
	defer t.Abort()
	var cs []Committable
	err := t.OrderedRead(preparedCell, int64(lo), int64(hi), func(k int64, v []byte) error {
		n, i := binary.Uvarint(v)
		if i <= 0 || uint64(len(v)-i) < n {
			return fmt.Errorf("committable of epoch %d: %d bytes do not decode", k, len(v))
		}
		run := string(v[i : i+int(n)])
		cs = append(cs, Committable{Epoch: executor.BarrierID(k), Run: run, Data: append([]byte(nil), v[i+int(n):]...)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sink %s: read committables of epochs [%d, %d): %w", p.name, lo, hi, err)
	}
	return cs, nil
}

// Delete removes every epoch below id: its values and its committable.
func (p *Pending) Delete(below executor.BarrierID) error {
	t := p.us.Begin()
	err := t.OrderedClear(recordsCell, 0, int64(below))
	if err == nil {
		err = t.OrderedClear(preparedCell, 0, int64(below))
	}
	if err != nil {
		t.Abort()
		return fmt.Errorf("sink %s: drop epochs below %d: %w", p.name, below, err)
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("sink %s: drop epochs below %d: %w", p.name, below, err)
	}
	return nil
}
