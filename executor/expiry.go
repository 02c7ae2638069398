package executor

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/timers"
	"github.com/weir-runner/weir/wire"
)

// Window expiration: Beam's OnWindowExpiration.
//
// A stateful transform with an OnWindowExpiration callback
// (StatefulSpec.WindowExpiration names its timer family) is called once
// for each key and window it saw an element in, when the window expires:
// once the input watermark passes the window's garbage-collection time,
// its max timestamp plus the allowed lateness, which is also when its user
// state is collected. The runner sets these timers; the SDK never does.
// Each goes to the SDK as a timer of the callback's family, as Prism sends
// it and Java's harness reads it: the element's key (as the family's
// timer coder encodes it, which is the main input's key encoding), no
// dynamic tag, the one window, the garbage-collection time to fire at, the
// window's max timestamp as hold (the callback's output timestamp, which
// Java's harness takes from the timer's hold) and the no-firing pane.
//
// They live in a timers.Set of their own, SDKStage.expiry:
//   - a committed bundle registers one for each key and window of its
//     elements that has none live (sawInput); a failed bundle registers
//     nothing, a retried one nothing twice;
//   - their holds keep the stage's output watermark at each window's max
//     timestamp until the callback has run (holdExpiry), so what it
//     outputs is not late downstream;
//   - at a watermark they fire after every user timer due at it, in
//     bundles of their own (Beam's runners fire the garbage-collection
//     timer after the end-of-window timers), and before the window's state
//     is collected (Watermark: fireDue, then collect). The user-timer hold
//     that bounds collection leaves them out: a window's state goes right
//     after its callbacks;
//   - a checkpoint holds them with the user timers (sdkStageState.Timers),
//     told apart on restore by family.

// windowExpiry is when a window expires: its max timestamp plus the
// allowed lateness, at most the end of the global window.
func windowExpiry(window []byte, lateness mtime.Time) mtime.Time {
	end := wire.WindowMaxTimestamp(window)
	if end >= mtime.EndOfGlobalWindowTime || end > mtime.MaxTimestamp-lateness {
		return mtime.EndOfGlobalWindowTime
	}
	return end + lateness
}

// sawInput registers the window expiration of every key and window of a
// committed bundle's elements that has none live.
func (s *SDKStage) sawInput(in [][]byte) error {
	if s.expiry == nil {
		return nil
	}
	st := s.Spec.Stateful
	for _, e := range in {
		key, err := s.Spec.Key(e)
		if err != nil {
			return fmt.Errorf("stage %s: key of an element: %w", s.Spec.Name, err)
		}
		wv, _, err := s.Spec.MainCodec.Decode(e, s.winScratch)
		if err != nil {
			return fmt.Errorf("stage %s: main input: %w", s.Spec.Name, err)
		}
		s.winScratch = wv.Windows
		for _, w := range wv.Windows {
			if s.expiry.Has(st.Transform, st.WindowExpiration, key, w, nil) {
				continue
			}
			// Copies: the element's bytes may share a buffer with others.
			s.expiry.Set(timers.Timer{Transform: st.Transform, Family: st.WindowExpiration, Domain: timers.EventTime,
				Key: bytes.Clone(key), Window: bytes.Clone(w),
				Fire: windowExpiry(w, st.AllowedLateness), Hold: wire.WindowMaxTimestamp(w)})
		}
	}
	return nil
}

// runExpirations runs the window expirations due, in bundles of at most
// MaxElems timers: the keys of a window all expire at once.
func (s *SDKStage) runExpirations(ctx context.Context, due []timers.Timer) error {
	var windows []byte
	for i := range due {
		t := &due[i]
		// Encoded when fired, not when set: a live expiration holds no
		// more than its key and window, in memory and in checkpoints.
		windows = binary.BigEndian.AppendUint32(windows[:0], 1)
		windows = append(windows, t.Window...)
		t.Encoded = wire.AppendTimer(nil, t.Key, nil, windows, t.Fire, t.Hold, []byte{wire.PaneNoFiring})
	}
	n := s.Spec.MaxElems
	if n <= 0 {
		n = maxBundleElems
	}
	for len(due) > 0 {
		k := min(n, len(due))
		if err := s.runBundle(ctx, nil, due[:k]); err != nil {
			return err
		}
		due = due[k:]
	}
	return nil
}

// liveTimers returns how many user timers and window expirations are live.
func (s *SDKStage) liveTimers() int {
	n := 0
	if s.timers != nil {
		n += s.timers.Len()
	}
	if s.expiry != nil {
		n += s.expiry.Len()
	}
	return n
}

// expiryHold is the least hold of the live window expirations.
func (s *SDKStage) expiryHold() mtime.Time {
	if s.expiry == nil {
		return mtime.MaxTimestamp
	}
	return s.expiry.Hold()
}
