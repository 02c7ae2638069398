package executor

import (
	"encoding/binary"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/wire"
)

// FuzzHandleState sends a stage's state handler a state request of any
// bytes, as an SDK's state stream delivers them: user state of every kind
// (inside a running bundle), side inputs and runner-held values. It must
// answer or return an error, never panic: the handler runs on the Fn API's
// state stream, for one bundle.
func FuzzHandleState(f *testing.F) {
	store, err := state.Open(state.Options{Dir: "db", FS: vfs.NewMem(), MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	varint := func(b []byte) (int, error) {
		if _, n := binary.Uvarint(b); n > 0 {
			return n, nil
		}
		return 0, wire.ErrShort
	}
	u := &userState{stage: "st", transform: "t", ids: map[string]bool{"bag": true, "map": true, "list": true},
		ordered: map[string]wire.Measure{"list": varint}}
	iter := newSideInput(SideInputSpec{TransformID: "t", LocalName: "s"})
	iter.values["w"] = []byte("abc")
	multi := newSideInput(SideInputSpec{TransformID: "t", LocalName: "m", Multimap: true})
	multi.byKey["w"] = map[string][]byte{"k": []byte("v")}
	multi.keys["w"] = []string{"k"}
	h := &stageState{
		side: &sideState{stage: "st", by: map[[2]string]*sideInput{{"t", "s"}: iter, {"t", "m"}: multi}},
		user: u,
		held: &heldState{stage: "st", in: &HeldInput{Store: store, PageSize: 16}},
	}
	window := wire.AppendTime(nil, 1000) // an interval window's end, as bytes
	for _, k := range []*fnpb.StateKey{
		{Type: &fnpb.StateKey_BagUserState_{BagUserState: &fnpb.StateKey_BagUserState{TransformId: "t", UserStateId: "bag", Window: window, Key: []byte("a")}}},
		{Type: &fnpb.StateKey_MultimapUserState_{MultimapUserState: &fnpb.StateKey_MultimapUserState{TransformId: "t", UserStateId: "map", Window: window, Key: []byte("a"), MapKey: []byte("mk")}}},
		{Type: &fnpb.StateKey_MultimapKeysUserState_{MultimapKeysUserState: &fnpb.StateKey_MultimapKeysUserState{TransformId: "t", UserStateId: "map", Window: window, Key: []byte("a")}}},
		{Type: &fnpb.StateKey_OrderedListUserState_{OrderedListUserState: &fnpb.StateKey_OrderedListUserState{TransformId: "t", UserStateId: "list", Window: window, Key: []byte("a"),
			Range: &fnpb.OrderedListRange{Start: 0, End: 10}}}},
		{Type: &fnpb.StateKey_IterableSideInput_{IterableSideInput: &fnpb.StateKey_IterableSideInput{TransformId: "t", SideInputId: "s", Window: []byte("w")}}},
		{Type: &fnpb.StateKey_MultimapSideInput_{MultimapSideInput: &fnpb.StateKey_MultimapSideInput{TransformId: "t", SideInputId: "m", Window: []byte("w"), Key: []byte("k")}}},
		{Type: &fnpb.StateKey_MultimapKeysSideInput_{MultimapKeysSideInput: &fnpb.StateKey_MultimapKeysSideInput{TransformId: "t", SideInputId: "m", Window: []byte("w")}}},
		{Type: &fnpb.StateKey_Runner_{Runner: &fnpb.StateKey_Runner{Key: []byte("token")}}},
	} {
		for _, r := range []*fnpb.StateRequest{
			{Request: &fnpb.StateRequest_Get{Get: &fnpb.StateGetRequest{}}},
			{Request: &fnpb.StateRequest_Append{Append: &fnpb.StateAppendRequest{Data: []byte{3, 'x'}}}},
			{Request: &fnpb.StateRequest_Clear{Clear: &fnpb.StateClearRequest{}}},
		} {
			r.Id, r.InstructionId, r.StateKey = "1", "i", k
			b, err := proto.Marshal(r)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req fnpb.StateRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			return
		}
		u.begin(store.NewUserState("st/0"), map[string]struct{}{"a": {}})
		defer u.end(false)
		resp, err := h.HandleState(&req)
		if err == nil && resp == nil {
			t.Fatalf("HandleState(%v) = nil, nil", &req)
		}
	})
}
