package executor

import (
	"context"
	"time"
)

// SDF resume delays. A splittable DoFn that stops with
// ProcessContinuation.ResumeIn(d) returns a residual that asks to run
// again no sooner than d later (a poll of an external system, say). The
// stage keeps its residuals as pending input and runs them once the least
// delay asked has passed (resumeAt): in Finish, where an SDF whose input
// has ended runs on, it waits for it; while its input is live, watermarks,
// barriers and processing time do not run them early (they wake the stage
// at resumeAt, NextWake), unless new main input arrives, which they ride
// along with. A snapshot records when they resume, so a restored stage
// waits out the rest of the delay rather than run them at once.

// residualsDue says when the pending residuals may run, if the pending
// input is residuals only and they wait for a delay.
func (s *SDKStage) residualsDue() (time.Time, bool) {
	if len(s.pending) == 0 || !s.openedAt.IsZero() || s.resumeAt.IsZero() {
		return time.Time{}, false
	}
	return s.resumeAt, true
}

// flushDue runs the pending input as one bundle, unless it is residuals
// waiting for their resume delay.
func (s *SDKStage) flushDue(ctx context.Context) error {
	if at, ok := s.residualsDue(); ok && time.Now().Before(at) {
		return nil
	}
	return s.flush(ctx)
}

// resumeSnapshot is what a snapshot records of the delay: the instant,
// and what was left of the delay then, which bounds the wait of a
// restored stage whose clock is behind.
func (s *SDKStage) resumeSnapshot() (atMillis, leftMillis int64) {
	if s.resumeAt.IsZero() {
		return 0, 0
	}
	return s.resumeAt.UnixMilli(), max(time.Until(s.resumeAt).Milliseconds(), 0)
}

// restoreResume sets when restored residuals resume: at the recorded
// instant, and no later than the recorded rest of the delay from now.
func (s *SDKStage) restoreResume(atMillis, leftMillis int64) {
	if atMillis == 0 {
		return
	}
	s.resumeAt = time.UnixMilli(atMillis)
	if bound := time.Now().Add(time.Duration(leftMillis) * time.Millisecond); bound.Before(s.resumeAt) {
		s.resumeAt = bound
	}
}
