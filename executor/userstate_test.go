package executor

import (
	"strings"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/state"
)

// TestUserStateRequests: bag requests of the bundle's keys are served from
// its transaction; requests for another transform, an undeclared state id
// or a key outside the bundle are errors naming the transform.
func TestUserStateRequests(t *testing.T) {
	store, err := state.Open(state.Options{Dir: "db", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	u := &userState{stage: "st", transform: "count", ids: map[string]bool{"n": true}}
	h := &stageState{side: &sideState{stage: "st"}, user: u}
	bag := func(transform, id, key string) *fnpb.StateKey {
		return &fnpb.StateKey{Type: &fnpb.StateKey_BagUserState_{BagUserState: &fnpb.StateKey_BagUserState{
			TransformId: transform, UserStateId: id, Key: []byte(key)}}}
	}
	appendReq := func(k *fnpb.StateKey, data string) *fnpb.StateRequest {
		return &fnpb.StateRequest{StateKey: k, Request: &fnpb.StateRequest_Append{Append: &fnpb.StateAppendRequest{Data: []byte(data)}}}
	}
	getReq := func(k *fnpb.StateKey) *fnpb.StateRequest {
		return &fnpb.StateRequest{StateKey: k, Request: &fnpb.StateRequest_Get{Get: &fnpb.StateGetRequest{}}}
	}

	if _, err := h.HandleState(getReq(bag("count", "n", "a"))); err == nil {
		t.Fatal("a state request outside a bundle was served")
	}
	u.begin(store.NewUserState("st/0"), map[string]struct{}{"a": {}})
	if _, err := h.HandleState(appendReq(bag("count", "n", "a"), "xy")); err != nil {
		t.Fatal(err)
	}
	resp, err := h.HandleState(getReq(bag("count", "n", "a")))
	if err != nil || string(resp.GetGet().GetData()) != "xy" {
		t.Fatalf("get = %q, %v; want xy", resp.GetGet().GetData(), err)
	}
	for _, tc := range []struct {
		name string
		key  *fnpb.StateKey
		want string
	}{
		{"other transform", bag("other", "n", "a"), `transform "other"`},
		{"undeclared state", bag("count", "nope", "a"), `transform count has no user state "nope"`},
		{"key outside the bundle", bag("count", "n", "b"), "not in the bundle"},
	} {
		_, err := h.HandleState(getReq(tc.key))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "stage st") {
			t.Errorf("%s: error %v, want one naming the stage and %q", tc.name, err, tc.want)
		}
	}
	if err := u.end(false); err != nil {
		t.Fatal(err)
	}
	// The aborted bundle left nothing behind.
	u.begin(store.NewUserState("st/0"), map[string]struct{}{"a": {}})
	defer u.end(false)
	if resp, err := h.HandleState(getReq(bag("count", "n", "a"))); err != nil || len(resp.GetGet().GetData()) != 0 {
		t.Fatalf("after an aborted bundle: get = %q, %v; want nothing", resp.GetGet().GetData(), err)
	}
}
