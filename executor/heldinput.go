package executor

import (
	"fmt"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/wire"
)

// HeldStore serves the groups a group-by-key handed out as state-backed
// iterables; *state.Store is one.
type HeldStore interface {
	ReadHeld(token, cont []byte, max int) (page, next []byte, err error)
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
