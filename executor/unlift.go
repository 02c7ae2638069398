package executor

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/wire"
)

// Running a lifted combine unlifted.
//
// Converting (liftswitch.go) saves a precombine's cache where keys do not
// repeat, but each input still becomes an accumulator that is encoded,
// shuffled, decoded and merged. Unlifted, the raw values cross the shuffle
// and the SDK combines each key's values once, after it: with unique keys
// that is the cheaper of all three, so weir decides, once per combine and
// from its first bundle, whether to run it unlifted. Since that changes
// what crosses the shuffle, the producer, the group-by-key and the
// consumer switch together, and before anything reaches the shuffle: a
// producer bundle that precombined is held until the combine is decided,
// and if the answer is to unlift, it is run again, unlifted, its outputs
// and metrics dropped. The first bundle to finish decides; bundles running
// beside it are run again when they finish. As they are bundle retries,
// nothing is lost or repeated downstream.

// UnliftSwitch is one combine's choice between its lifted and unlifted
// forms, shared by every subtask of its producer, group-by-key and
// consumer. It starts undecided and is decided once.
type UnliftSwitch struct {
	mode atomic.Int32
	mu   sync.Mutex // orders decisions
}

const (
	unliftUndecided int32 = iota
	unliftLifted
	unliftUnlifted
)

// Unlifted reports whether the combine was decided to run unlifted.
func (u *UnliftSwitch) Unlifted() bool { return u.mode.Load() == unliftUnlifted }

// decide decides the combine from a precombined bundle's counts, unless it
// is decided, and reports whether it runs unlifted. A bundle that cannot
// be run again decides for lifting, as does one with too little input to
// tell.
func (u *UnliftSwitch) decide(in, out int64, canRerun bool) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if m := u.mode.Load(); m != unliftUndecided {
		return m == unliftUnlifted
	}
	m := unliftLifted
	if canRerun && in >= liftEvidence && float64(out) > liftKeep*float64(in) {
		m = unliftUnlifted
	}
	u.mode.Store(m)
	return m == unliftUnlifted
}

// decision names the switch's decision in snapshots: "" undecided,
// "lifted" or "unlifted". A checkpoint must keep it: the group-by-key's
// store holds what crossed the shuffle in the decided form, and a
// restored job that decided anew, the other way, would read it in the
// wrong one.
func (u *UnliftSwitch) decision() string {
	switch u.mode.Load() {
	case unliftLifted:
		return "lifted"
	case unliftUnlifted:
		return "unlifted"
	}
	return ""
}

// restore decides the switch as a checkpoint recorded it. Every subtask
// of the combine's stages recorded the same, and restores it before its
// first bundle, so none decides anew; a switch decided otherwise is an
// error.
func (u *UnliftSwitch) restore(d string) error {
	var m int32
	switch d {
	case "lifted":
		m = unliftLifted
	case "unlifted":
		m = unliftUnlifted
	default:
		return fmt.Errorf("unknown combine decision %q", d)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if cur := u.mode.Load(); cur != unliftUndecided && cur != m {
		return fmt.Errorf("the combine runs %s, the checkpoint says %s", u.decision(), d)
	}
	u.mode.Store(m)
	return nil
}

// UnliftSpec is an SDK stage's part in running a combine unlifted.
type UnliftSpec struct {
	Switch *UnliftSwitch
	// Descriptor is the stage's unlifted twin: for the producer, without
	// its precombine; for the consumer, combining grouped values.
	Descriptor string
	// Producer is set for the stage that precombines; it decides.
	Producer bool
	// ConvertDescriptor is the consumer's Descriptor with its own
	// precombines, of later combines, converting (LiftSpec).
	ConvertDescriptor string
}

// awaits reports whether the stage is a producer whose combine is not yet
// decided. Its open bundle then waits to fill instead of closing on
// MaxBundleTime: the first bundle decides, and one cut short by a slow
// source would have too few inputs to tell. Its input is bounded, so it
// fills or ends.
func (us *UnliftSpec) awaits() bool {
	return us != nil && us.Producer && us.Switch.mode.Load() == unliftUndecided
}

// descriptor reports the unlifted descriptor when the stage's bundles are
// to run unlifted.
func (us *UnliftSpec) descriptor() (string, bool) {
	if us == nil || !us.Switch.Unlifted() {
		return "", false
	}
	return us.Descriptor, true
}

// unliftedDescriptor picks the descriptor of the stage's next bundle once
// its part of a combine runs unlifted: a consumer that precombines later
// combines still switches between precombining and converting them.
func (s *SDKStage) unliftedDescriptor() (string, liftUse, bool) {
	us := s.Spec.Unlift
	d, ok := us.descriptor()
	switch {
	case !ok:
		return "", liftNone, false
	case us.Producer:
		return d, liftUnlifted, true
	case s.Spec.Lift == nil:
		return d, liftNone, true
	case s.lift.precombine():
		return d, liftPrecombine, true
	default:
		return us.ConvertDescriptor, liftConvert, true
	}
}

// rerun reports whether a finished producer bundle that ran use must be
// dropped and run again unlifted, deciding the combine if it is not.
func (s *SDKStage) rerun(use liftUse, canRerun bool, res *fnapi.BundleResult) bool {
	us := s.Spec.Unlift
	if us == nil || !us.Producer || s.Spec.Lift == nil || (use != liftPrecombine && use != liftConvert) {
		return false
	}
	if m := us.Switch.mode.Load(); m != unliftUndecided {
		// Decided: no counts to read, no lock to take, bundle after bundle.
		return m == unliftUnlifted
	}
	var in, out int64
	if use == liftPrecombine { // converting bundles say nothing of repeats
		in, out = s.Spec.Lift.counts(res.Response.GetMonitoringInfos())
	}
	return us.Switch.decide(in, out, canRerun)
}

// dropped records the metrics of a bundle run again unlifted as attempted
// only: its outputs are gone, so nothing of it is committed.
func (s *SDKStage) dropped(res *fnapi.BundleResult) {
	if s.Spec.Metrics != nil {
		s.Spec.Metrics(res.Response.GetMonitoringInfos(), false)
	}
}

// UnliftCodec returns a codec whose values are measured by raw or lifted
// as the switch says, for the PCollection that crosses from a producer to
// its group-by-key: its elements are accumulators until the combine is
// decided to run unlifted, and raw values from then on. Nothing crosses
// while it is undecided.
func UnliftCodec(sw *UnliftSwitch, lifted, raw *wire.Codec) *wire.Codec {
	return wire.NewCodec(lifted.Window, func(b []byte) (int, error) {
		if sw.Unlifted() {
			return raw.Value(b)
		}
		return lifted.Value(b)
	})
}
