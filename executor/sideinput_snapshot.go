package executor

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// A side input's contents live in its stage's memory, not in the store,
// so the stage's snapshot carries them: a restored stage must answer the
// same side-input reads as before, and the producer of a side input
// resumes where the checkpoint left it rather than produce again (an
// ended producer produces nothing). Side inputs are meant to be small;
// each subtask records its own copy.

// sideSnapshot is one side input at a barrier. Windows and keys are
// encoded bytes, so they are entries, not the keys of a JSON object.
type sideSnapshot struct {
	Transform string       `json:"transform"`
	Local     string       `json:"local"`
	WM        mtime.Time   `json:"wm"`
	Entries   []sideRecord `json:"entries,omitempty"`
}

// sideRecord is the values of one window (iterable), or of one key of one
// window (multimap, in the order the keys arrived).
type sideRecord struct {
	Window []byte `json:"w"`
	Key    []byte `json:"k,omitempty"`
	Values []byte `json:"v"`
}

// snapshotSides records every side input that holds anything or has a
// watermark. Called between bundles, from the stage's goroutine, which is
// the only writer.
func (s *SDKStage) snapshotSides() []sideSnapshot {
	s.side.mu.RLock()
	defer s.side.mu.RUnlock()
	var out []sideSnapshot
	for _, si := range s.sides {
		if si.wm <= mtime.MinTimestamp && len(si.values) == 0 && len(si.byKey) == 0 {
			continue
		}
		ss := sideSnapshot{Transform: si.spec.TransformID, Local: si.spec.LocalName, WM: si.wm}
		for w, v := range si.values {
			ss.Entries = append(ss.Entries, sideRecord{Window: []byte(w), Values: v})
		}
		for w, keys := range si.keys {
			for _, k := range keys {
				ss.Entries = append(ss.Entries, sideRecord{Window: []byte(w), Key: []byte(k), Values: si.byKey[w][k]})
			}
		}
		out = append(out, ss)
	}
	return out
}

// restoreSides puts recorded side inputs back.
func (s *SDKStage) restoreSides(snaps []sideSnapshot) error {
	s.side.mu.Lock()
	defer s.side.mu.Unlock()
	for _, ss := range snaps {
		si, ok := s.side.by[[2]string{ss.Transform, ss.Local}]
		if !ok {
			return fmt.Errorf("stage %s: restore: the checkpoint holds side input %q of %s, which the stage does not read", s.Spec.Name, ss.Local, ss.Transform)
		}
		si.wm = max(si.wm, ss.WM)
		for _, e := range ss.Entries {
			w := string(e.Window)
			if !si.spec.Multimap {
				si.values[w] = append(si.values[w], e.Values...)
				continue
			}
			m := si.byKey[w]
			if m == nil {
				m = map[string][]byte{}
				si.byKey[w] = m
			}
			if _, seen := m[string(e.Key)]; !seen {
				si.keys[w] = append(si.keys[w], string(e.Key))
			}
			m[string(e.Key)] = append(m[string(e.Key)], e.Values...)
		}
	}
	return nil
}
