package watermarkmgr

import (
	"errors"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// InputID indexes a Manager's inputs, from 0.
type InputID int

// ErrEnded is returned for any event on an input after its end: the
// producer broke the channel protocol.
var ErrEnded = errors.New("watermarkmgr: event after end of input")

type input struct {
	wm    mtime.Time
	idle  bool
	ended bool
}

// Manager tracks one subtask's watermarks. See the package documentation for
// the rules and the caller's loop. Use New: the zero value is not ready.
type Manager struct {
	inputs  []input
	unended int // inputs that have not ended
	active  int // inputs neither idle nor ended
	in      mtime.Time
	holds   holds
	emitted mtime.Time // the last output watermark Emit reported
}

// New returns a Manager with n inputs, each at -inf and active.
func New(n int) *Manager {
	if n < 0 {
		n = 0
	}
	m := &Manager{
		inputs:  make([]input, n),
		unended: n,
		active:  n,
		in:      mtime.MinTimestamp,
		emitted: mtime.MinTimestamp,
	}
	for i := range m.inputs {
		m.inputs[i].wm = mtime.MinTimestamp
	}
	if n == 0 {
		m.in = mtime.MaxTimestamp
	}
	return m
}

// Advance records watermark t on input id. A t behind the input's
// watermark is ignored, but still counts as a sign of life: an idle input
// becomes active.
func (m *Manager) Advance(id InputID, t mtime.Time) error {
	x, err := m.input(id)
	if err != nil {
		return err
	}
	m.wake(x)
	if t > x.wm {
		x.wm = t
	}
	m.recompute()
	return nil
}

// Active records that input id delivered data: if it was idle, it is
// counted in the minimum again.
func (m *Manager) Active(id InputID) error {
	x, err := m.input(id)
	if err != nil {
		return err
	}
	if m.wake(x) {
		m.recompute()
	}
	return nil
}

// Idle leaves input id out of the minimum until it delivers data or a
// watermark. Marking an idle input idle again does nothing.
func (m *Manager) Idle(id InputID) error {
	x, err := m.input(id)
	if err != nil {
		return err
	}
	if !x.idle {
		x.idle = true
		m.active--
		m.recompute()
	}
	return nil
}

// End records the end of input id: its watermark is +inf and it no longer
// holds the minimum. Ending an input twice is an error.
func (m *Manager) End(id InputID) error {
	x, err := m.input(id)
	if err != nil {
		return err
	}
	if !x.idle {
		m.active--
	}
	x.idle = false
	x.ended = true
	x.wm = mtime.MaxTimestamp
	m.unended--
	m.recompute()
	return nil
}

// SetHold adds hold id at t, or moves it to t if it exists. The output
// watermark stays at or below t until the hold is moved or released. A hold
// behind the last emitted output watermark keeps the output where it is; it
// does not pull it back.
func (m *Manager) SetHold(id HoldID, t mtime.Time) { m.holds.set(id, t) }

// ReleaseHold removes hold id and reports whether it existed.
func (m *Manager) ReleaseHold(id HoldID) bool { return m.holds.release(id) }

// Hold returns hold id's timestamp, if it exists.
func (m *Manager) Hold(id HoldID) (mtime.Time, bool) { return m.holds.get(id) }

// Holds returns the number of holds.
func (m *Manager) Holds() int { return m.holds.len() }

// Input returns the input watermark.
func (m *Manager) Input() mtime.Time { return m.in }

// Output returns the output watermark as Emit would report it now.
func (m *Manager) Output() mtime.Time {
	return max(m.emitted, min(m.in, m.holds.min()))
}

// Emit returns the output watermark and whether it advanced since the last
// Emit; the caller forwards it downstream only if it did. From then on the
// output watermark never goes below the returned value.
func (m *Manager) Emit() (mtime.Time, bool) {
	out := m.Output()
	if out <= m.emitted {
		return m.emitted, false
	}
	m.emitted = out
	return out, true
}

// Restore sets the output watermark last emitted to t, as a checkpoint
// recorded it, for a manager that starts over from a checkpoint: its
// output never goes below t, and Emit reports nothing until the output
// passes it. Restoring the inputs alone is not enough: an input that came
// back from idleness behind the output, or a hold, leaves the minimum
// below what was emitted. A t behind the output changes nothing.
func (m *Manager) Restore(t mtime.Time) { m.emitted = max(m.emitted, t) }

// Emitted returns the output watermark Emit last reported: what went
// downstream, and what a checkpoint records (Restore).
func (m *Manager) Emitted() mtime.Time { return m.emitted }

// AllIdle reports whether every input that has not ended is idle (and at
// least one has not ended). The input watermark cannot advance until one of
// them comes back or ends, so the caller may tell its consumers it is idle.
func (m *Manager) AllIdle() bool { return m.unended > 0 && m.active == 0 }

// InputWatermark returns input id's last watermark, and false once it has
// ended or if there is no such input.
func (m *Manager) InputWatermark(id InputID) (mtime.Time, bool) {
	if id < 0 || int(id) >= len(m.inputs) || m.inputs[id].ended {
		return 0, false
	}
	return m.inputs[id].wm, true
}

func (m *Manager) input(id InputID) (*input, error) {
	if id < 0 || int(id) >= len(m.inputs) {
		return nil, fmt.Errorf("watermarkmgr: input %d out of range [0, %d)", id, len(m.inputs))
	}
	x := &m.inputs[id]
	if x.ended {
		return nil, fmt.Errorf("%w: input %d", ErrEnded, id)
	}
	return x, nil
}

// wake makes an idle input active again and reports whether it was idle.
func (m *Manager) wake(x *input) bool {
	if !x.idle {
		return false
	}
	x.idle = false
	m.active++
	return true
}

// recompute raises the input watermark to the minimum over active inputs.
// It scans every input: a subtask has at most a few hundred channels, and
// the scan runs once per watermark message, not per element.
func (m *Manager) recompute() {
	switch {
	case m.unended == 0:
		m.in = mtime.MaxTimestamp
		return
	case m.active == 0:
		return // every remaining input is idle: nothing to take the minimum of
	}
	low := mtime.MaxTimestamp
	for i := range m.inputs {
		x := &m.inputs[i]
		if !x.idle && !x.ended && x.wm < low {
			low = x.wm
		}
	}
	if low > m.in {
		m.in = low
	}
}
