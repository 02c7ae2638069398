package twophase

import (
	"encoding/json"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
)

// What a checkpoint holds of a StableInput: the main input's pending
// epochs are in the store (Pending); the rest is its snapshot, composed
// with the snapshot of the operator it wraps, which is opaque here:
//
//	{"stable_input": 1, "sealed": [{"id": 7, "wm": 1700}], "given": 1500,
//	 "inner": "<base64 of Inner's snapshot>"}
//
// The version tells the wrapper's snapshot from the wrapped operator's: a
// snapshot without it was written by the operator alone, when its stage
// did not require stable input (a savepoint from before the requirement
// was added), and goes to Inner whole. A newer version is refused.

// stableVersion is the version of the snapshot this code writes.
const stableVersion = 1

type stableState struct {
	Version int `json:"stable_input"`
	// Sealed are the main input watermarks of the barriers whose epochs
	// are not handed over, oldest first; the newest is the snapshot's own
	// barrier. A job restored from it hands its epochs over at once, and
	// with them its watermark (release).
	Sealed []sealedJSON `json:"sealed,omitempty"`
	// Given is the newest watermark handed to Inner.
	Given mtime.Time `json:"given"`
	Inner []byte     `json:"inner,omitempty"`
}

type sealedJSON struct {
	ID executor.BarrierID `json:"id"`
	WM mtime.Time         `json:"wm"`
}

// SnapshotState implements executor.StateSnapshotter: the wrapper's own
// memory, and Inner's snapshot if it takes one.
func (s *StableInput) SnapshotState(id executor.BarrierID) ([]byte, error) {
	st := stableState{Version: stableVersion, Given: mtime.MinTimestamp}
	if s.started {
		st.Given = s.given
	}
	for _, m := range s.sealed {
		st.Sealed = append(st.Sealed, sealedJSON{m.id, m.wm})
	}
	if ss, ok := s.Inner.(executor.StateSnapshotter); ok {
		b, err := ss.SnapshotState(id)
		if err != nil {
			return nil, err
		}
		st.Inner = b
	}
	return json.Marshal(st)
}

// RestoreState implements executor.StateRestorer. The gate calls it
// before anything else, so Inner has its state back before the restored
// epochs reach it.
func (s *StableInput) RestoreState(b []byte) error {
	var st stableState
	if err := json.Unmarshal(b, &st); err != nil || st.Version == 0 {
		// Not the wrapper's: the operator's own, from before its stage
		// required stable input. No epoch waits in such a checkpoint.
		return s.restoreInner(b)
	}
	if st.Version > stableVersion {
		return fmt.Errorf("stable input %s: restore: the checkpoint's state is version %d, written by a newer weir; this one reads version %d",
			s.Pending.name, st.Version, stableVersion)
	}
	s.sealed = s.sealed[:0]
	for _, m := range st.Sealed {
		s.sealed = append(s.sealed, sealedMark{m.ID, m.WM})
	}
	s.given, s.restored = st.Given, true
	if st.Inner == nil {
		return nil
	}
	return s.restoreInner(st.Inner)
}

func (s *StableInput) restoreInner(b []byte) error {
	r, ok := s.Inner.(executor.StateRestorer)
	if !ok {
		return fmt.Errorf("stable input %s: restore: the checkpoint holds state of the operator (%d bytes) but %T cannot restore it",
			s.Pending.name, len(b), s.Inner)
	}
	return r.RestoreState(b)
}
