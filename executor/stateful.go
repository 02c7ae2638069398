package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/timers"
	"github.com/weir-runner/weir/wire"
)

// StatefulSpec describes the stateful transform of an SDK stage.
type StatefulSpec struct {
	Transform       string
	StateIDs        []string
	OrderedLists    map[string]wire.Measure
	Timers          []TimerFamilySpec
	AllowedLateness mtime.Time
	// WindowExpiration is the timer family of the transform's
	// OnWindowExpiration callback, one of Timers; "" when it has none
	// (expiry.go).
	WindowExpiration string
}

// TimerFamilySpec is one timer family of the stateful transform.
type TimerFamilySpec struct {
	ID             string
	ProcessingTime bool
	Codec          *wire.TimerCodec
}

// maxTimerRounds bounds the bundles fired at one instant: timers that keep
// setting themselves due again would otherwise never let time move on.
const maxTimerRounds = 100000

// timerInputs returns the bundle's timer input: the fired timers of each
// family, and an empty entry for every other family.
func (s *SDKStage) timerInputs(fired []timers.Timer) []fnapi.TimerInput {
	st := s.Spec.Stateful
	if st == nil || len(st.Timers) == 0 {
		return nil
	}
	in := make([]fnapi.TimerInput, len(st.Timers))
	idx := map[string]int{}
	for i, f := range st.Timers {
		in[i].TimerFamily = fnapi.TimerFamily{TransformID: st.Transform, FamilyID: f.ID}
		idx[f.ID] = i
	}
	for _, t := range fired {
		i := idx[t.Family]
		in[i].Timers = append(in[i].Timers, t.Encoded...)
	}
	return in
}

// applyTimers records the timers a bundle set and cleared.
func (s *SDKStage) applyTimers(res *fnapi.BundleResult) error {
	st := s.Spec.Stateful
	for _, f := range st.Timers {
		b := res.Timers[fnapi.TimerFamily{TransformID: st.Transform, FamilyID: f.ID}]
		if f.ID == st.WindowExpiration && len(b) > 0 {
			return fmt.Errorf("stage %s: the SDK set timers of family %s of %s, the OnWindowExpiration family, which only the runner sets",
				s.Spec.Name, f.ID, st.Transform)
		}
		for len(b) > 0 {
			t, n, err := f.Codec.Decode(b)
			if err != nil {
				return fmt.Errorf("stage %s: timer family %s of %s: %w", s.Spec.Name, f.ID, st.Transform, err)
			}
			b = b[n:]
			if t.Clear {
				s.timers.Clear(st.Transform, f.ID, t.Key, t.Window, t.Tag)
				continue
			}
			d := timers.EventTime
			if f.ProcessingTime {
				d = timers.ProcessingTime
			}
			s.timers.Set(timers.Timer{Transform: st.Transform, Family: f.ID, Domain: d,
				Key: t.Key, Window: t.Window, Tag: t.Tag, Fire: t.Fire, Hold: t.Hold,
				Encoded: append([]byte(nil), t.Raw...)})
		}
	}
	return nil
}

// bundleKeys returns the keys of a bundle's elements and fired timers.
func (s *SDKStage) bundleKeys(in [][]byte, fired []timers.Timer) (map[string]struct{}, error) {
	keys := make(map[string]struct{}, len(in)+len(fired))
	for _, e := range in {
		k, err := s.Spec.Key(e)
		if err != nil {
			return nil, fmt.Errorf("stage %s: key of an element: %w", s.Spec.Name, err)
		}
		keys[string(k)] = struct{}{}
	}
	for _, t := range fired {
		keys[string(t.Key)] = struct{}{}
	}
	return keys, nil
}

// fireDue runs bundles of the timers of domain d due at now until none is
// left: a timer a fired timer sets in the past fires at once. In event
// time, the window expirations due come once no user timer is (expiry.go).
func (s *SDKStage) fireDue(ctx context.Context, d timers.Domain, now mtime.Time) error {
	if s.timers == nil {
		return nil
	}
	for round := 0; ; round++ {
		due := s.timers.Due(d, now)
		expired := false
		if len(due) == 0 && d == timers.EventTime && s.expiry != nil {
			due, expired = s.expiry.Due(timers.EventTime, now), true
		}
		if len(due) == 0 {
			return nil
		}
		if round == maxTimerRounds {
			return fmt.Errorf("stage %s: transform %s: timers still due after %d rounds at %v: a timer keeps setting itself due",
				s.Spec.Name, s.Spec.Stateful.Transform, round, now)
		}
		var err error
		if expired {
			err = s.runExpirations(ctx, due)
		} else {
			err = s.runBundle(ctx, nil, due)
		}
		if err != nil {
			return err
		}
	}
}

// fireAll fires every timer at the end of input, when both event time and
// processing time are over.
func (s *SDKStage) fireAll(ctx context.Context) error {
	if s.timers == nil {
		return nil
	}
	for s.liveTimers() > 0 {
		if err := s.fireDue(ctx, timers.EventTime, mtime.MaxTimestamp); err != nil {
			return err
		}
		if err := s.fireDue(ctx, timers.ProcessingTime, mtime.MaxTimestamp); err != nil {
			return err
		}
	}
	return nil
}

// ProcessingTime implements ProcessingTimer: a TestStream moved the job's
// synthetic processing time to t.
func (s *SDKStage) ProcessingTime(ctx context.Context, t mtime.Time) error {
	s.synthetic = true
	s.procTime = t
	if s.sidesReady() {
		if err := s.flushDue(ctx); err != nil {
			return err
		}
		if err := s.fireDue(ctx, timers.ProcessingTime, t); err != nil {
			return err
		}
		if err := s.forwardWatermark(ctx); err != nil {
			return err
		}
	}
	return s.Out.ProcessingTime(ctx, t)
}

// NextWake implements Waker: the earliest processing-time timer (unless a
// TestStream drives processing time), the open bundle's MaxBundleTime, or
// when residuals waiting for their resume delay may run.
func (s *SDKStage) NextWake() (time.Time, bool) {
	at, ok := s.bundleDue()
	if r, rok := s.residualsDue(); rok && (!ok || r.Before(at)) {
		at, ok = r, true
	}
	if s.timers == nil || s.synthetic {
		return at, ok
	}
	t, tok := s.timers.Next(timers.ProcessingTime)
	switch {
	case !tok:
		return at, ok
	case !ok || t.ToTime().Before(at):
		return t.ToTime(), true
	}
	return at, true
}

// Wake implements Waker: close the open bundle if it is due, run the
// residuals whose resume delay has passed, and fire the processing-time
// timers due at now.
func (s *SDKStage) Wake(ctx context.Context, now time.Time) error {
	bundle, bok := s.bundleDue()
	res, rok := s.residualsDue()
	if bok && !now.Before(bundle) || rok && !now.Before(res) {
		if err := s.flush(ctx); err != nil {
			return err
		}
		if err := s.forwardWatermark(ctx); err != nil {
			return err
		}
	}
	if s.timers == nil || s.synthetic || !s.sidesReady() {
		return nil
	}
	if err := s.flushDue(ctx); err != nil {
		return err
	}
	if err := s.fireDue(ctx, timers.ProcessingTime, mtime.FromTime(now)); err != nil {
		return err
	}
	return s.forwardWatermark(ctx)
}

// collect drops the user state of windows the watermark has expired. A
// live user timer may still read its window's state when it fires, so
// nothing at or after the least user-timer hold is collected. Window
// expirations do not bound it: the caller fires those due first, and the
// state of a window with one live has not expired.
func (s *SDKStage) collect(wm mtime.Time) error {
	if s.User == nil {
		return nil
	}
	wm = min(wm, s.timers.Hold())
	if _, err := s.User.Collect(wm); err != nil {
		return fmt.Errorf("stage %s: %w", s.Spec.Name, err)
	}
	return nil
}
