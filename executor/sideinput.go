package executor

import (
	"fmt"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"

	"github.com/weir-runner/weir/wire"
)

// SideInputSpec describes one side input of an SDK stage.
type SideInputSpec struct {
	TransformID, LocalName string
	Multimap               bool
	Codec                  *wire.Codec
	Key                    wire.Measure // multimap only
	Windows                SideWindows
}

// sideInput holds one side input's elements per encoded window, as the
// SDK's state requests ask for them.
type sideInput struct {
	spec SideInputSpec
	// wm is the side input's watermark: a side window it has passed is
	// complete, and its values no longer change.
	wm mtime.Time
	// values holds, per window, the concatenated values (iterable) or, per
	// window and key, the concatenated values of that key (multimap).
	values map[string][]byte
	byKey  map[string]map[string][]byte
	keys   map[string][]string // window → keys in arrival order
}

func newSideInput(spec SideInputSpec) *sideInput {
	return &sideInput{spec: spec, wm: mtime.MinTimestamp, values: map[string][]byte{},
		byKey: map[string]map[string][]byte{}, keys: map[string][]string{}}
}

// done reports whether the side input has ended.
func (s *sideInput) done() bool { return s.wm >= mtime.MaxTimestamp }

// readyFor reports whether the side window that the main window ending at
// mainMax maps to is complete.
func (s *sideInput) readyFor(mainMax mtime.Time) bool {
	return s.done() || s.wm > s.spec.Windows.ReadyAfter(mainMax)
}

// add takes side-input elements in. Bundles may be reading other windows
// of the side input meanwhile; the caller holds the stage's side lock.
func (s *sideInput) add(elems [][]byte) error {
	var windows [][]byte
	for _, e := range elems {
		wv, _, err := s.spec.Codec.Decode(e, windows)
		if err != nil {
			return fmt.Errorf("side input %s of %s: %w", s.spec.LocalName, s.spec.TransformID, err)
		}
		windows = wv.Windows
		for _, w := range wv.Windows {
			win := string(w)
			if !s.spec.Multimap {
				s.values[win] = append(s.values[win], wv.Value...)
				continue
			}
			k, v, err := wire.SplitKV(s.spec.Key, wv.Value)
			if err != nil {
				return fmt.Errorf("side input %s of %s: %w", s.spec.LocalName, s.spec.TransformID, err)
			}
			m := s.byKey[win]
			if m == nil {
				m = map[string][]byte{}
				s.byKey[win] = m
			}
			if _, seen := m[string(k)]; !seen {
				s.keys[win] = append(s.keys[win], string(k))
			}
			m[string(k)] = append(m[string(k)], v...)
		}
	}
	return nil
}

// sideState answers a stage's side-input state requests. A bundle reads
// only side windows that are complete; later windows of the same side input
// may grow meanwhile, under mu.
type sideState struct {
	stage string
	mu    sync.RWMutex
	by    map[[2]string]*sideInput // (transform, local name)
}

// HandleState implements fnapi.StateHandler.
func (h *sideState) HandleState(req *fnpb.StateRequest) (*fnpb.StateResponse, error) {
	if req.GetGet() == nil {
		return nil, fmt.Errorf("stage %s: only reads of side inputs are supported, got %T", h.stage, req.GetRequest())
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	var data []byte
	switch k := req.GetStateKey().GetType().(type) {
	case *fnpb.StateKey_IterableSideInput_:
		si, err := h.lookup(k.IterableSideInput.GetTransformId(), k.IterableSideInput.GetSideInputId())
		if err != nil {
			return nil, err
		}
		data = si.values[string(k.IterableSideInput.GetWindow())]
	case *fnpb.StateKey_MultimapSideInput_:
		si, err := h.lookup(k.MultimapSideInput.GetTransformId(), k.MultimapSideInput.GetSideInputId())
		if err != nil {
			return nil, err
		}
		data = si.byKey[string(k.MultimapSideInput.GetWindow())][string(k.MultimapSideInput.GetKey())]
	case *fnpb.StateKey_MultimapKeysSideInput_:
		si, err := h.lookup(k.MultimapKeysSideInput.GetTransformId(), k.MultimapKeysSideInput.GetSideInputId())
		if err != nil {
			return nil, err
		}
		for _, key := range si.keys[string(k.MultimapKeysSideInput.GetWindow())] {
			data = append(data, key...)
		}
	default:
		return nil, fmt.Errorf("stage %s: state key %T is not supported", h.stage, k)
	}
	return &fnpb.StateResponse{Response: &fnpb.StateResponse_Get{Get: &fnpb.StateGetResponse{Data: data}}}, nil
}

func (h *sideState) lookup(transform, local string) (*sideInput, error) {
	si, ok := h.by[[2]string{transform, local}]
	if !ok {
		return nil, fmt.Errorf("stage %s: transform %s has no side input %q", h.stage, transform, local)
	}
	return si, nil
}
