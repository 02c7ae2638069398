package executor

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/timers"
)

// What each operator keeps in Go memory that a checkpoint must hold, and
// gets back on restore. Records in the store come back by themselves (the
// runner imports them); these are the rest. Each is JSON: small, readable
// in a manifest, and versioned by its field names.

// seqCounter is a store structure numbering its appends (see state's
// Seq and SetSeq); the triggered group's windows are behind an interface
// that tests fake, so it is found by type assertion.
type seqCounter interface{ Seq() uint64 }

// gbkState is a group-by-key's memory: the shuffle's sequence counter and,
// with merging windows, the sessions not yet fired.
type gbkState struct {
	Seq      uint64         `json:"seq"`
	Sessions []sessionState `json:"sessions,omitempty"`
	// Held are the store ranges of fired groups still held for their
	// consumers: a restore drops them rather than fire them again.
	Held [][2][]byte `json:"held,omitempty"`
}

type sessionState struct {
	Window, Key  []byte
	Start, End   mtime.Time
	MinTS, MaxTS mtime.Time
	Values       [][]byte
}

// SnapshotState implements StateSnapshotter.
func (g *GroupByKey) SnapshotState(BarrierID) ([]byte, error) {
	st := gbkState{}
	if g.Buf != nil {
		st.Seq, st.Held = g.Buf.Seq(), g.Buf.HeldRanges()
	}
	for _, gs := range g.sessions {
		for _, s := range gs {
			st.Sessions = append(st.Sessions, sessionState{Window: s.window, Key: s.key, Start: s.start, End: s.end,
				MinTS: s.minTS, MaxTS: s.maxTS, Values: s.values})
		}
	}
	return json.Marshal(st)
}

// RestoreState implements StateRestorer.
func (g *GroupByKey) RestoreState(b []byte) error {
	var st gbkState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("group by key %s: restore: %w", g.Name, err)
	}
	if g.Buf != nil {
		if err := g.Buf.DropRanges(st.Held); err != nil {
			return fmt.Errorf("group by key %s: restore: %w", g.Name, err)
		}
		if err := g.Buf.SetSeq(st.Seq); err != nil {
			return fmt.Errorf("group by key %s: restore: %w", g.Name, err)
		}
	}
	for _, s := range st.Sessions {
		if g.sessions == nil {
			g.sessions = map[string][]*group{}
		}
		g.sessions[string(s.Key)] = append(g.sessions[string(s.Key)], &group{window: s.Window, key: s.Key,
			start: s.Start, end: s.End, values: s.Values, minTS: s.MinTS, maxTS: s.MaxTS})
	}
	return nil
}

// triggeredState is a triggered group's memory: its windows' sequence
// counter and its input and output watermarks. The window index and
// processing-time deadlines are rebuilt from the store (rebuild), which
// the runner imported first. The watermarks matter: a restored gate hands
// the operator its recorded input watermark, and from the minimum the
// operator would take every window that ended before it as newly reached
// and fire its on-time pane again (windows kept for allowed lateness).
type triggeredState struct {
	Seq   uint64     `json:"seq"`
	WM    mtime.Time `json:"wm"`
	OutWM mtime.Time `json:"out_wm"`
}

// SnapshotState implements StateSnapshotter.
func (g *TriggeredGroupByKey) SnapshotState(BarrierID) ([]byte, error) {
	st := triggeredState{WM: mtime.MinTimestamp, OutWM: mtime.MinTimestamp}
	if g.started {
		st.WM, st.OutWM = g.wm, g.outWM
	}
	if c, ok := g.Windows.(seqCounter); ok {
		st.Seq = c.Seq()
	}
	return json.Marshal(st)
}

// RestoreState implements StateRestorer.
func (g *TriggeredGroupByKey) RestoreState(b []byte) error {
	var st triggeredState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("group by key %s: restore: %w", g.Name, err)
	}
	if c, ok := g.Windows.(interface{ SetSeq(uint64) error }); ok {
		if err := c.SetSeq(st.Seq); err != nil {
			return fmt.Errorf("group by key %s: restore: %w", g.Name, err)
		}
	}
	if err := g.init(); err != nil {
		return err
	}
	g.wm, g.outWM = st.WM, st.OutWM
	return nil
}

// sdkStageState is an SDK stage's memory at a barrier (its bundle is
// closed then): the user state's sequence counter, the live timers of a
// stateful DoFn (its window expirations among them), the SDF residuals
// waiting to resume with their watermark hold, the main-input elements
// waiting for side inputs, and the side inputs' contents.
type sdkStageState struct {
	UserSeq uint64         `json:"user_seq,omitempty"`
	Timers  []timers.Timer `json:"timers,omitempty"`
	Pending [][]byte       `json:"pending,omitempty"`
	ResHold mtime.Time     `json:"residual_hold,omitempty"`
	// ResumeAt (Unix milliseconds) is when the residuals may run, and
	// ResumeLeft the rest of their delay at the snapshot (sdfresume.go).
	ResumeAt   int64          `json:"resume_at_ms,omitempty"`
	ResumeLeft int64          `json:"resume_left_ms,omitempty"`
	Waiting    [][]byte       `json:"waiting,omitempty"`
	WaitHold   mtime.Time     `json:"waiting_hold,omitempty"`
	Sides      []sideSnapshot `json:"sides,omitempty"`
	// Unlift is how the stage's combine was decided to run (unlift.go).
	Unlift string `json:"unlift,omitempty"`
}

// SnapshotState implements StateSnapshotter. A stage with nothing in
// memory records nothing.
func (s *SDKStage) SnapshotState(BarrierID) ([]byte, error) {
	var st sdkStageState
	if s.User != nil {
		st.UserSeq = s.User.Seq()
	}
	if s.timers != nil {
		st.Timers = s.timers.All()
	}
	if s.expiry != nil {
		st.Timers = append(st.Timers, s.expiry.All()...)
	}
	if len(s.pending) > 0 {
		st.Pending, st.ResHold = s.pending, s.resHold
		st.ResumeAt, st.ResumeLeft = s.resumeSnapshot()
	}
	if len(s.waiting) > 0 {
		// Held groups among them are kept whole: their tokens die with
		// the process.
		w, err := s.state.held.detachAll(s.waiting, false)
		if err != nil {
			return nil, err
		}
		st.Waiting, st.WaitHold = w, s.waitHold
	}
	st.Sides = s.snapshotSides()
	if s.Spec.Unlift != nil {
		st.Unlift = s.Spec.Unlift.Switch.decision()
	}
	if st.UserSeq == 0 && len(st.Timers) == 0 && len(st.Pending) == 0 && len(st.Waiting) == 0 && len(st.Sides) == 0 &&
		st.Unlift == "" {
		return nil, nil
	}
	return json.Marshal(st)
}

// RestoreState implements StateRestorer. A field it does not know is
// refused, not dropped: the state of another kind of operator (a stage
// that required stable input when the checkpoint was taken, and so was
// wrapped, twophase.StableInput) or of a newer weir would otherwise
// restore as nothing, silently.
func (s *SDKStage) RestoreState(b []byte) error {
	var st sdkStageState
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return fmt.Errorf("stage %s: restore: the checkpoint's state is not an SDK stage's as this weir writes it "+
			"(did the stage's requirements change, such as requires_stable_input?): %w", s.Spec.Name, err)
	}
	if st.UserSeq > 0 {
		if s.User == nil {
			return fmt.Errorf("stage %s: restore: the checkpoint holds user state of a stage without any", s.Spec.Name)
		}
		s.User.SetSeq(st.UserSeq)
	}
	if len(st.Timers) > 0 {
		if s.timers == nil {
			return fmt.Errorf("stage %s: restore: the checkpoint holds %d timers of a stage without timers", s.Spec.Name, len(st.Timers))
		}
		for _, t := range st.Timers {
			if s.expiry != nil && t.Family == s.Spec.Stateful.WindowExpiration && t.Transform == s.Spec.Stateful.Transform {
				s.expiry.Set(t)
				continue
			}
			s.timers.Set(t)
		}
	}
	if len(st.Pending) > 0 {
		if !s.Spec.SDF {
			return fmt.Errorf("stage %s: restore: the checkpoint holds %d residuals of a stage that processes no restrictions", s.Spec.Name, len(st.Pending))
		}
		s.pending, s.resHold = st.Pending, st.ResHold
		s.restoreResume(st.ResumeAt, st.ResumeLeft)
		for _, e := range st.Pending {
			s.bytes += len(e)
		}
	}
	if len(st.Waiting) > 0 {
		s.waiting, s.waitHold = st.Waiting, st.WaitHold
	}
	if st.Unlift != "" {
		if s.Spec.Unlift == nil {
			return fmt.Errorf("stage %s: restore: the checkpoint holds a decision of a combine the stage has no part in", s.Spec.Name)
		}
		if err := s.Spec.Unlift.Switch.restore(st.Unlift); err != nil {
			return fmt.Errorf("stage %s: restore: %w", s.Spec.Name, err)
		}
	}
	return s.restoreSides(st.Sides)
}
