package executor

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/wire"
)

// stageState answers a bundle's state requests: side inputs from memory,
// user state from the bundle's store transaction.
type stageState struct {
	side *sideState
	user *userState // nil for stages without user state
	held *heldState // nil unless the main input holds groups in the store
}

// HandleState implements fnapi.StateHandler.
func (h *stageState) HandleState(req *fnpb.StateRequest) (*fnpb.StateResponse, error) {
	switch req.GetStateKey().GetType().(type) {
	case *fnpb.StateKey_BagUserState_, *fnpb.StateKey_MultimapUserState_,
		*fnpb.StateKey_MultimapKeysUserState_, *fnpb.StateKey_OrderedListUserState_:
		if h.user == nil {
			return nil, fmt.Errorf("stage %s: user state request to a stage without user state", h.side.stage)
		}
		h.user.mu.Lock()
		defer h.user.mu.Unlock()
		if h.user.txn == nil {
			return nil, fmt.Errorf("stage %s: user state request outside a running bundle", h.side.stage)
		}
		return h.user.handle(req)
	case *fnpb.StateKey_Runner_:
		if h.held == nil {
			return nil, fmt.Errorf("stage %s: read of runner-held values (token %x), but the stage's input has none",
				h.side.stage, req.GetStateKey().GetRunner().GetKey())
		}
		return h.held.handle(req)
	}
	return h.side.HandleState(req)
}

// userState serves user state requests of one stateful transform from the
// running bundle's transaction.
type userState struct {
	stage     string
	transform string
	ids       map[string]bool         // declared state ids
	ordered   map[string]wire.Measure // ordered-list element measures
	lateness  mtime.Time

	// The stage goroutine begins and ends transactions; the worker's state
	// stream goroutine serves requests from them.
	mu  sync.Mutex
	txn *state.Txn
	// keys are the keys of the running bundle's elements and timers: state
	// of any other key is not the bundle's to touch.
	keys map[string]struct{}
}

// begin opens the transaction of a bundle.
func (u *userState) begin(us *state.UserState, keys map[string]struct{}) {
	u.mu.Lock()
	u.txn = us.Begin()
	u.keys = keys
	u.mu.Unlock()
}

// end commits or discards the bundle's transaction.
func (u *userState) end(commit bool) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	t := u.txn
	u.txn = nil
	if commit {
		return t.Commit()
	}
	t.Abort()
	return nil
}

// expiry is when the state of a window may be collected.
func (u *userState) expiry(window []byte) mtime.Time { return windowExpiry(window, u.lateness) }

func (u *userState) cell(transform, id string, window, key []byte) (state.Cell, error) {
	if transform != u.transform {
		return state.Cell{}, fmt.Errorf("stage %s: state request for transform %q, which has no user state here (the stage's stateful transform is %q)", u.stage, transform, u.transform)
	}
	if !u.ids[id] {
		return state.Cell{}, fmt.Errorf("stage %s: transform %s has no user state %q", u.stage, transform, id)
	}
	if _, ok := u.keys[string(key)]; !ok {
		return state.Cell{}, fmt.Errorf("stage %s: transform %s: state %s requested for key %q, which is not in the bundle", u.stage, transform, id, key)
	}
	return state.Cell{KeyGroup: KeyGroup(key), Window: window, Key: key, Transform: transform, StateID: id}, nil
}

func getResp(data []byte) *fnpb.StateResponse {
	return &fnpb.StateResponse{Response: &fnpb.StateResponse_Get{Get: &fnpb.StateGetResponse{Data: data}}}
}

var (
	appendResp = &fnpb.StateResponse{Response: &fnpb.StateResponse_Append{Append: &fnpb.StateAppendResponse{}}}
	clearResp  = &fnpb.StateResponse{Response: &fnpb.StateResponse_Clear{Clear: &fnpb.StateClearResponse{}}}
)

func (u *userState) handle(req *fnpb.StateRequest) (*fnpb.StateResponse, error) {
	switch k := req.GetStateKey().GetType().(type) {
	case *fnpb.StateKey_BagUserState_:
		b := k.BagUserState
		c, err := u.cell(b.GetTransformId(), b.GetUserStateId(), b.GetWindow(), b.GetKey())
		if err != nil {
			return nil, err
		}
		return u.bag(req, c)
	case *fnpb.StateKey_MultimapUserState_:
		m := k.MultimapUserState
		c, err := u.cell(m.GetTransformId(), m.GetUserStateId(), m.GetWindow(), m.GetKey())
		if err != nil {
			return nil, err
		}
		return u.multimap(req, c, m.GetMapKey())
	case *fnpb.StateKey_MultimapKeysUserState_:
		m := k.MultimapKeysUserState
		c, err := u.cell(m.GetTransformId(), m.GetUserStateId(), m.GetWindow(), m.GetKey())
		if err != nil {
			return nil, err
		}
		return u.multimapKeys(req, c)
	case *fnpb.StateKey_OrderedListUserState_:
		o := k.OrderedListUserState
		c, err := u.cell(o.GetTransformId(), o.GetUserStateId(), o.GetWindow(), o.GetKey())
		if err != nil {
			return nil, err
		}
		return u.orderedList(req, c, o.GetRange())
	}
	return nil, fmt.Errorf("stage %s: state key %T is not user state", u.stage, req.GetStateKey().GetType())
}

func (u *userState) bag(req *fnpb.StateRequest, c state.Cell) (*fnpb.StateResponse, error) {
	var err error
	switch {
	case req.GetGet() != nil:
		var data []byte
		if data, err = u.txn.BagRead(c); err == nil {
			return getResp(data), nil
		}
	case req.GetAppend() != nil:
		if err = u.txn.BagAppend(c, u.expiry(c.Window), req.GetAppend().GetData()); err == nil {
			return appendResp, nil
		}
	case req.GetClear() != nil:
		if err = u.txn.BagClear(c); err == nil {
			return clearResp, nil
		}
	default:
		err = fmt.Errorf("request %T is not supported", req.GetRequest())
	}
	return nil, fmt.Errorf("stage %s: transform %s: bag state %s: %w", u.stage, c.Transform, c.StateID, err)
}

func (u *userState) multimap(req *fnpb.StateRequest, c state.Cell, mapKey []byte) (*fnpb.StateResponse, error) {
	var err error
	switch {
	case req.GetGet() != nil:
		var data []byte
		if data, err = u.txn.MultimapRead(c, mapKey); err == nil {
			return getResp(data), nil
		}
	case req.GetAppend() != nil:
		if err = u.txn.MultimapAppend(c, u.expiry(c.Window), mapKey, req.GetAppend().GetData()); err == nil {
			return appendResp, nil
		}
	case req.GetClear() != nil:
		if err = u.txn.MultimapClearKey(c, mapKey); err == nil {
			return clearResp, nil
		}
	default:
		err = fmt.Errorf("request %T is not supported", req.GetRequest())
	}
	return nil, fmt.Errorf("stage %s: transform %s: map state %s: %w", u.stage, c.Transform, c.StateID, err)
}

func (u *userState) multimapKeys(req *fnpb.StateRequest, c state.Cell) (*fnpb.StateResponse, error) {
	var err error
	switch {
	case req.GetGet() != nil:
		var data []byte
		if data, err = u.txn.MultimapKeys(c); err == nil {
			return getResp(data), nil
		}
	case req.GetClear() != nil:
		if err = u.txn.MultimapClear(c); err == nil {
			return clearResp, nil
		}
	default:
		err = fmt.Errorf("request %T is not supported on map keys", req.GetRequest())
	}
	return nil, fmt.Errorf("stage %s: transform %s: map state %s: %w", u.stage, c.Transform, c.StateID, err)
}

// orderedList stores each entry (a varint sort key, then the element)
// under its sort key, so reads of a range come back sorted.
func (u *userState) orderedList(req *fnpb.StateRequest, c state.Cell, r *fnpb.OrderedListRange) (*fnpb.StateResponse, error) {
	var err error
	switch {
	case req.GetGet() != nil:
		var data []byte
		err = u.txn.OrderedRead(c, r.GetStart(), r.GetEnd(), func(k int64, v []byte) error {
			data = binary.AppendUvarint(data, uint64(k))
			data = append(data, v...)
			return nil
		})
		if err == nil {
			return getResp(data), nil
		}
	case req.GetAppend() != nil:
		if err = u.appendOrdered(c, req.GetAppend().GetData()); err == nil {
			return appendResp, nil
		}
	case req.GetClear() != nil:
		if err = u.txn.OrderedClear(c, r.GetStart(), r.GetEnd()); err == nil {
			return clearResp, nil
		}
	default:
		err = fmt.Errorf("request %T is not supported", req.GetRequest())
	}
	return nil, fmt.Errorf("stage %s: transform %s: ordered list state %s: %w", u.stage, c.Transform, c.StateID, err)
}

func (u *userState) appendOrdered(c state.Cell, b []byte) error {
	m := u.ordered[c.StateID]
	if m == nil {
		return fmt.Errorf("state %s is not an ordered list", c.StateID)
	}
	exp := u.expiry(c.Window)
	for len(b) > 0 {
		k, w := binary.Uvarint(b)
		if w <= 0 {
			return fmt.Errorf("entry sort key: %w", wire.ErrShort)
		}
		n, err := m(b[w:])
		if err != nil {
			return fmt.Errorf("entry value: %w", err)
		}
		if err := u.txn.OrderedAppend(c, exp, int64(k), b[w:w+n]); err != nil {
			return err
		}
		b = b[w+n:]
	}
	return nil
}
