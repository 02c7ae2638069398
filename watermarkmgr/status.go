package watermarkmgr

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// Status is what a producer tells its consumers of its watermark besides
// the watermark itself, as Flink's WatermarkStatus: an Idle producer
// asserts nothing for now, so its consumers leave its channel out of their
// minimum until it says Active again. A source whose splits are all idle,
// or that owns none, is idle; so is a subtask whose inputs are all idle.
type Status uint8

const (
	// StatusActive is every channel's status until its producer says
	// otherwise.
	StatusActive Status = iota
	StatusIdle
)

func (s Status) String() string {
	switch s {
	case StatusActive:
		return "active"
	case StatusIdle:
		return "idle"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// SetStatus records that input id's producer said st: Idle leaves the
// input out of the minimum, Active counts it again (Idle and Active). An
// input that comes back behind the input watermark holds it where it is
// until it catches up; its elements behind it are late (Behind).
func (m *Manager) SetStatus(id InputID, st Status) error {
	if st == StatusIdle {
		return m.Idle(id)
	}
	return m.Active(id)
}

// Status is the manager's own status, what its subtask tells its
// consumers: Idle while every input that has not ended is idle (AllIdle),
// Active otherwise, including once every input has ended (an ended input
// is at +inf, which says more than idleness).
func (m *Manager) Status() Status {
	if m.AllIdle() {
		return StatusIdle
	}
	return StatusActive
}

// IsIdle reports whether input id is idle.
func (m *Manager) IsIdle(id InputID) bool {
	return id >= 0 && int(id) < len(m.inputs) && m.inputs[id].idle
}

// Behind reports whether input id, not ended, is behind the input
// watermark: it is idle, or it came back from idleness behind the others.
// Only such an input can deliver elements behind the input watermark
// without breaking its own watermark's promise; the caller looks at their
// timestamps (they are late) only then, so an input in step costs nothing.
func (m *Manager) Behind(id InputID) bool {
	if id < 0 || int(id) >= len(m.inputs) {
		return false
	}
	x := &m.inputs[id]
	return !x.ended && x.wm < m.in
}

// StatusOf is the status of a subtask with several input ports, a
// Manager each: Idle when at least one input has not ended and every
// input that has not ended, on every port, is idle. A port whose inputs
// have all ended has nothing to say.
func StatusOf(ports []*Manager) Status {
	live := false
	for _, p := range ports {
		if p.unended == 0 {
			continue
		}
		if p.active > 0 {
			return StatusActive
		}
		live = true
	}
	if live {
		return StatusIdle
	}
	return StatusActive
}

// Announcer decides what a producer sends its consumers of its watermark
// and status. It holds no channel: the caller sends what it says.
//
// An idle producer sends no watermark: a watermark would count its
// consumers' channel again (Manager.Advance wakes an idle input), and
// nothing would make it idle there again, since the producer believes it
// said so. So while idle the announcer keeps the newest watermark, and
// sends it right after Active. The first status is always sent, whatever
// it is: a consumer restored from a checkpoint may hold the channel idle
// while the restored producer starts active.
type Announcer struct {
	known   bool
	idle    bool
	sent    mtime.Time // the newest watermark sent
	pending mtime.Time // while idle, the newest watermark held back
}

// NewAnnouncer returns an announcer that has sent nothing: its producer
// is active, as every channel starts, but its first status is sent.
func NewAnnouncer() *Announcer {
	return &Announcer{sent: mtime.MinTimestamp, pending: mtime.MinTimestamp}
}

// Watermark reports whether watermark t must be sent now: it is ahead of
// what was sent and the producer is not idle. While idle it is kept and
// sent at the next Active.
func (a *Announcer) Watermark(t mtime.Time) bool {
	if a.idle {
		a.pending = max(a.pending, t)
		return false
	}
	if t <= a.sent {
		return false
	}
	a.sent = t
	return true
}

// SetStatus records the producer's status. It reports whether the status
// must be sent, and, for Active, the watermark held back while idle that
// must follow it (ok false when there is none).
func (a *Announcer) SetStatus(st Status) (send bool, wm mtime.Time, ok bool) {
	idle := st == StatusIdle
	if a.known && a.idle == idle {
		return false, 0, false
	}
	a.known, a.idle = true, idle
	if idle || a.pending <= a.sent {
		return true, 0, false
	}
	a.sent = a.pending
	return true, a.pending, true
}

// Status returns the status last sent; Active before any.
func (a *Announcer) Status() Status {
	if a.idle {
		return StatusIdle
	}
	return StatusActive
}
