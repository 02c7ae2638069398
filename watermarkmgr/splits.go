package watermarkmgr

import (
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// SplitID indexes a Splits' splits, from 0.
type SplitID int

// SplitsConfig is a source's watermark policy for its splits.
type SplitsConfig struct {
	// OutOfOrderness bounds how far behind a split's largest event time a
	// later record may be: the split's watermark is that maximum minus it.
	OutOfOrderness time.Duration
	// IdleTimeout: a split quiet this long, not counting time paused,
	// leaves the minimum until its next record. 0 means never idle.
	IdleTimeout time.Duration
}

// split is one split's state.
type split struct {
	maxTime mtime.Time    // largest event time seen; MinTimestamp before the first record
	quiet   time.Duration // unpaused time since the last record: the activity clock
	paused  bool
	idle    bool
	ended   bool
}

// Splits tracks the watermarks of one reader's splits (Kafka partitions,
// SDF restrictions) and the reader's output watermark over them.
//
// A split's watermark is the largest event time it delivered minus the
// bounded out-of-orderness. A split without records for the idle timeout is
// idle and leaves the minimum until its next record. Only unpaused time
// counts towards idleness: a split paused by alignment delivers nothing
// because it was told not to, and counting that silence as idleness would
// drop it from the minimum and make the output jump (FLINK-35886).
//
// The caller passes the processing time to every call that can move the
// activity clocks; Splits never reads a clock, so tests drive it with a
// fake one. It is not safe for concurrent use.
type Splits struct {
	cfg    SplitsConfig
	splits []split
	mgr    *Manager
	now    time.Time // processing time the activity clocks were last advanced to
}

// NewSplits returns a tracker of n splits, each at -inf, active, unpaused,
// with its activity clock starting at now. With no splits the output
// watermark is +inf: a reader that owns nothing holds nothing back.
func NewSplits(n int, cfg SplitsConfig, now time.Time) *Splits {
	s := &Splits{cfg: cfg, splits: make([]split, max(n, 0)), mgr: New(n), now: now}
	for i := range s.splits {
		s.splits[i].maxTime = mtime.MinTimestamp
	}
	return s
}

// Len returns the number of splits.
func (s *Splits) Len() int { return len(s.splits) }

// Record notes a record of split id at event time t, read at now. It
// returns whether t is behind the reader's output watermark, so that
// consumers will see it late: the caller decides what that means.
func (s *Splits) Record(id SplitID, t mtime.Time, now time.Time) (late bool, err error) {
	x, err := s.split(id)
	if err != nil {
		return false, err
	}
	s.tick(now)
	late = t < s.mgr.Output()
	x.quiet = 0
	if t > x.maxTime {
		x.maxTime = t
	}
	if x.idle {
		x.idle = false
		if err := s.mgr.Active(InputID(id)); err != nil {
			return late, err
		}
	}
	return late, s.mgr.Advance(InputID(id), s.watermark(x))
}

// Pending notes that split id has records it has not delivered yet: a
// reader holds them back for alignment (HoldBound.Admits). The split has
// data, so it is active: its activity clock restarts and, if it was idle,
// it rejoins the minimum at its watermark, as a record would make it. Its
// watermark does not move: only delivered records move it.
func (s *Splits) Pending(id SplitID, now time.Time) error {
	x, err := s.split(id)
	if err != nil {
		return err
	}
	s.tick(now)
	x.quiet = 0
	if x.idle {
		x.idle = false
		return s.mgr.Active(InputID(id))
	}
	return nil
}

// Tick advances the activity clocks to now and marks idle every unpaused
// split that has been quiet for the idle timeout. It returns the splits
// that became idle.
func (s *Splits) Tick(now time.Time) ([]SplitID, error) {
	s.tick(now)
	if s.cfg.IdleTimeout <= 0 {
		return nil, nil
	}
	var idled []SplitID
	for i := range s.splits {
		x := &s.splits[i]
		if x.ended || x.idle || x.paused || x.quiet < s.cfg.IdleTimeout {
			continue
		}
		x.idle = true
		if err := s.mgr.Idle(InputID(i)); err != nil {
			return idled, err
		}
		idled = append(idled, SplitID(i))
	}
	return idled, nil
}

// tick moves the activity clocks of unpaused splits forward to now. A now
// behind the last one moves nothing: processing time does not go back.
func (s *Splits) tick(now time.Time) {
	d := now.Sub(s.now)
	if d <= 0 {
		return
	}
	s.now = now
	for i := range s.splits {
		if x := &s.splits[i]; !x.paused && !x.ended {
			x.quiet += d
		}
	}
}

// Pause stops split id's activity clock: while paused it cannot become
// idle. The caller pauses the split's input too.
func (s *Splits) Pause(id SplitID, now time.Time) error {
	x, err := s.split(id)
	if err != nil {
		return err
	}
	s.tick(now)
	x.paused = true
	return nil
}

// Resume restarts split id's activity clock where it stopped.
func (s *Splits) Resume(id SplitID, now time.Time) error {
	x, err := s.split(id)
	if err != nil {
		return err
	}
	s.tick(now)
	x.paused = false
	return nil
}

// End records that split id delivers nothing more: its watermark is +inf
// and it no longer holds the minimum. Ending it again does nothing.
func (s *Splits) End(id SplitID) error {
	if id >= 0 && int(id) < len(s.splits) && s.splits[id].ended {
		return nil
	}
	x, err := s.split(id)
	if err != nil {
		return err
	}
	x.ended, x.idle, x.paused = true, false, false
	return s.mgr.End(InputID(id))
}

// SplitMark is what a checkpoint keeps of a split so that a restored
// reader resumes its watermark and idleness where they were, rather than
// from -inf and active: the largest event time delivered, and the
// activity clock.
type SplitMark struct {
	MaxTime mtime.Time `json:"max_time"`
	Idle    bool       `json:"idle,omitempty"`
	// QuietMillis is the unpaused time since the split's last record.
	QuietMillis int64 `json:"quiet_ms,omitempty"`
}

// Mark returns what a checkpoint keeps of split id.
func (s *Splits) Mark(id SplitID) SplitMark {
	if id < 0 || int(id) >= len(s.splits) {
		return SplitMark{MaxTime: mtime.MinTimestamp}
	}
	x := &s.splits[id]
	return SplitMark{MaxTime: x.maxTime, Idle: x.idle, QuietMillis: x.quiet.Milliseconds()}
}

// Restore puts split id where a checkpoint's mark left it: its largest
// event time, its activity clock (which goes on from there at the
// processing time of the last call) and, with an idle timeout, its
// idleness. Call it before the split's first record; for a split that
// ended it is an error.
func (s *Splits) Restore(id SplitID, m SplitMark) error {
	x, err := s.split(id)
	if err != nil {
		return err
	}
	x.maxTime = max(x.maxTime, m.MaxTime)
	x.quiet = max(time.Duration(m.QuietMillis)*time.Millisecond, 0)
	if err := s.mgr.Advance(InputID(id), s.watermark(x)); err != nil {
		return err
	}
	if m.Idle && s.cfg.IdleTimeout > 0 && !x.idle {
		x.idle = true
		return s.mgr.Idle(InputID(id))
	}
	return nil
}

// Emitted returns the output watermark Emit last reported.
func (s *Splits) Emitted() mtime.Time { return s.mgr.Emitted() }

// RestoreOutput sets the reader's output watermark to out, what a
// checkpoint recorded (Output): it never goes below it (Manager.Restore).
func (s *Splits) RestoreOutput(out mtime.Time) { s.mgr.Restore(out) }

// Watermark returns split id's watermark: +inf once ended.
func (s *Splits) Watermark(id SplitID) mtime.Time {
	if id < 0 || int(id) >= len(s.splits) {
		return mtime.MinTimestamp
	}
	return s.watermark(&s.splits[id])
}

func (s *Splits) watermark(x *split) mtime.Time {
	if x.ended {
		return mtime.MaxTimestamp
	}
	return subSaturating(x.maxTime, s.cfg.OutOfOrderness)
}

// State reports split id's watermark, whether it is idle, paused or
// ended, and its activity clock, as an alignment group needs them.
func (s *Splits) State(id SplitID) SplitState {
	if id < 0 || int(id) >= len(s.splits) {
		return SplitState{Watermark: mtime.MaxTimestamp, Ended: true}
	}
	x := &s.splits[id]
	return SplitState{Watermark: s.watermark(x), Idle: x.idle, Paused: x.paused, Ended: x.ended, Quiet: x.quiet}
}

// States appends every split's state to dst, in split order.
func (s *Splits) States(dst []SplitState) []SplitState {
	for i := range s.splits {
		dst = append(dst, s.State(SplitID(i)))
	}
	return dst
}

// Output returns the reader's output watermark as Emit would report it.
func (s *Splits) Output() mtime.Time {
	if len(s.splits) == 0 {
		return s.mgr.Emitted()
	}
	return s.mgr.Output()
}

// Emit returns the reader's output watermark, the minimum over splits
// that are neither idle nor ended, and whether it advanced since the last
// Emit. It never moves backwards (see Manager).
//
// A reader that owns no split emits nothing: the minimum over no splits
// is +inf, which would claim the end of time for a reader that is only
// idle (Status).
func (s *Splits) Emit() (mtime.Time, bool) {
	if len(s.splits) == 0 {
		return s.mgr.Emitted(), false
	}
	return s.mgr.Emit()
}

// AllIdle reports whether every split that has not ended is idle.
func (s *Splits) AllIdle() bool { return s.mgr.AllIdle() }

// Status is what the reader tells its consumers (Status): idle while
// every split that has not ended is idle, and idle when it owns no split
// at all, so that a reader left without a split holds nothing back
// (FLINK-32414) without claiming the end of time, as +inf would.
func (s *Splits) Status() Status {
	if len(s.splits) == 0 {
		return StatusIdle
	}
	return s.mgr.Status()
}

func (s *Splits) split(id SplitID) (*split, error) {
	if id < 0 || int(id) >= len(s.splits) {
		return nil, fmt.Errorf("watermarkmgr: split %d out of range [0, %d)", id, len(s.splits))
	}
	x := &s.splits[id]
	if x.ended {
		return nil, fmt.Errorf("%w: split %d", ErrEnded, id)
	}
	return x, nil
}

// subSaturating returns t minus d, stopping at MinTimestamp.
func subSaturating(t mtime.Time, d time.Duration) mtime.Time {
	ms := mtime.Time(d.Milliseconds())
	if t-mtime.MinTimestamp <= ms {
		return mtime.MinTimestamp
	}
	return t - ms
}

// addSaturating returns t plus ms, stopping at MaxTimestamp (FLINK-31632:
// the announced bound over an all-idle group is +inf, not an overflow).
func addSaturating(t, ms mtime.Time) mtime.Time {
	if ms >= mtime.MaxTimestamp-t {
		return mtime.MaxTimestamp
	}
	return t + ms
}
