package executor

import (
	"bytes"
	"fmt"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/wire"
)

// HeldStore serves the groups a group-by-key handed out as state-backed
// iterables; *state.Store is one.
type HeldStore interface {
	ReadHeld(token, cont []byte, max int) (page, next []byte, err error)
	// EachHeld calls fn with each value of a held group, in order.
	EachHeld(token []byte, fn func(value []byte) error) error
	Release(token []byte) error
}

// HeldInput describes a main input that comes from group-by-keys which
// hand out large groups as state-backed iterables: the first values
// inline, then a token for the rest, which the SDK reads from the stage's
// state handler page by page. The stage releases each group once the
// bundle that got it succeeded; a retried bundle reads it again.
type HeldInput struct {
	Store HeldStore
	// Codec and Key split the input's KV<key, iterable> elements.
	Codec *wire.Codec
	Key   wire.Measure
	// PageSize is the bytes of values one state response carries, at
	// least; default 1 MiB.
	PageSize int
}

// heldState answers a stage's reads of held groups.
type heldState struct {
	stage string
	in    *HeldInput
}

func (h *heldState) handle(req *fnpb.StateRequest) (*fnpb.StateResponse, error) {
	token := req.GetStateKey().GetRunner().GetKey()
	get := req.GetGet()
	if get == nil {
		return nil, fmt.Errorf("stage %s: runner-held iterables are read-only, got %T", h.stage, req.GetRequest())
	}
	max := h.in.PageSize
	if max <= 0 {
		max = 1 << 20
	}
	page, next, err := h.in.Store.ReadHeld(token, get.GetContinuationToken(), max)
	if err != nil {
		return nil, fmt.Errorf("stage %s: read grouped values held in the store: %w", h.stage, err)
	}
	return &fnpb.StateResponse{Response: &fnpb.StateResponse_Get{Get: &fnpb.StateGetResponse{
		Data: page, ContinuationToken: next}}}, nil
}

// release gives up the held groups among a finished bundle's input.
func (h *heldState) release(in [][]byte) error {
	if h == nil {
		return nil
	}
	for _, e := range in {
		token, ok, err := h.token(e)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := h.in.Store.Release(token); err != nil {
			return fmt.Errorf("stage %s: release grouped values held in the store: %w", h.stage, err)
		}
	}
	return nil
}

// detach returns element e with its held group, if it has one, read from
// the store and inlined: an element that replays without the group, which
// does not outlive the process (and a restore drops what a group-by-key's
// snapshot says it held). It reports whether e had one.
func (h *heldState) detach(e []byte) ([]byte, bool, error) {
	n, err := h.in.Codec.HeaderLen(e)
	if err != nil {
		return nil, false, fmt.Errorf("stage %s: grouped input element: %w", h.stage, err)
	}
	k, err := h.in.Key(e[n:])
	if err != nil {
		return nil, false, fmt.Errorf("stage %s: grouped input element's key: %w", h.stage, err)
	}
	token, ok := wire.StateBackedToken(e[n+k:], state.TokenLen)
	if !ok {
		return e, false, nil
	}
	var rest [][]byte
	err = h.in.Store.EachHeld(token, func(v []byte) error {
		rest = append(rest, bytes.Clone(v))
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("stage %s: read grouped values held in the store: %w", h.stage, err)
	}
	out := append(make([]byte, 0, len(e)+len(rest)*8), e[:n+k]...)
	out, _ = wire.AppendResolvedIterable(out, e[n+k:], state.TokenLen, rest)
	return out, true, nil
}

// detachAll returns elems with every held group inlined (detach); with
// release, the originals' claims on their groups are given up too, as
// the result replaces them for good.
func (h *heldState) detachAll(elems [][]byte, release bool) ([][]byte, error) {
	if h == nil {
		return elems, nil
	}
	var out [][]byte
	for i, e := range elems {
		d, held, err := h.detach(e)
		if err != nil {
			return nil, err
		}
		if held && out == nil {
			out = append(make([][]byte, 0, len(elems)), elems[:i]...)
		}
		if out != nil {
			out = append(out, d)
		}
	}
	if out == nil {
		return elems, nil
	}
	if release {
		if err := h.release(elems); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// token returns the token of the held group in element e, if it has one.
func (h *heldState) token(e []byte) ([]byte, bool, error) {
	n, err := h.in.Codec.HeaderLen(e)
	if err != nil {
		return nil, false, fmt.Errorf("stage %s: grouped input element: %w", h.stage, err)
	}
	k, err := h.in.Key(e[n:])
	if err != nil {
		return nil, false, fmt.Errorf("stage %s: grouped input element's key: %w", h.stage, err)
	}
	token, ok := wire.StateBackedToken(e[n+k:], state.TokenLen)
	return token, ok, nil
}

// Detach implements Detacher: main-input elements that name held groups
// come back with them inlined (detach).
func (s *SDKStage) Detach(port int, elems [][]byte, release bool) ([][]byte, error) {
	if port != 0 {
		return elems, nil
	}
	return s.state.held.detachAll(elems, release)
}
