package executor

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/wire"
)

// heldGroup runs groupInput(n) through a group-by-key that holds large
// groups and returns the element of the large one, which names its held
// values by token.
func heldGroup(t *testing.T, n int) (store HeldStore, elem []byte, out *wire.Codec) {
	t.Helper()
	in, out := heldCodecs(t)
	st := memStateStore(t)
	var mu sync.Mutex
	var got [][]byte
	g := &Graph{Nodes: []*Node{
		{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return listSource(groupInput(n)), nil }},
		gbkNode(st, in),
		{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{From: 1}},
			New: func(int, *Output) (Operator, error) { return collect{&mu, &got}, nil }},
	}}
	if err := g.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	h := &heldState{stage: "consumer", in: &HeldInput{Store: st, Codec: out, Key: lpMeasure}}
	for _, e := range got {
		if _, ok, err := h.token(e); err != nil {
			t.Fatal(err)
		} else if ok {
			return st, e, out
		}
	}
	t.Fatal("no group was held")
	return nil, nil, nil
}

// groupValues returns the values of a grouped element that holds them
// all (no token), parsing its KV<bytes, iterable<bytes>>.
func groupValues(t *testing.T, out *wire.Codec, e []byte) []string {
	t.Helper()
	wv, _, err := out.Decode(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, it, err := wire.SplitKV(lpMeasure, wv.Value)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := wire.StateBackedToken(it, state.TokenLen); ok {
		t.Fatal("the element still names a held group by token, which a restored process does not have")
	}
	if n, err := out.Measure(e); err != nil || n != len(e) {
		t.Fatalf("the element measures %d of %d bytes: %v", n, len(e), err)
	}
	var vals []string
	b := it[4:]
	for len(b) > 0 {
		c, n := binary.Uvarint(b)
		b = b[n:]
		for range c {
			vals = append(vals, string(b[1:1+b[0]]))
			b = b[1+b[0]:]
		}
	}
	return vals
}

func wantGroup(n int) string {
	var vs []string
	for i := range n {
		vs = append(vs, fmt.Sprintf("v%05d", i))
	}
	return fmt.Sprint(vs)
}

// TestHeldGroupsOutliveTheProcess: a group-by-key's large group reaches
// its consumer as a token for values the store holds, a token that names
// nothing in a restored process (whose group-by-key drops what its
// snapshot says it held). So whatever a checkpoint keeps of such an
// element must carry the values: the in-flight data an unaligned barrier
// overtakes at the consumer, and the main input its snapshot keeps
// waiting for side inputs.
func TestHeldGroupsOutliveTheProcess(t *testing.T) {
	ctx := context.Background()
	store, big, out := heldGroup(t, 500)
	spec := &SDKStageSpec{Name: "consumer", MainCodec: out,
		SideInputs: []SideInputSpec{{TransformID: "t", LocalName: "side", Codec: out}},
		Held:       &HeldInput{Store: store, Codec: out, Key: lpMeasure}}

	t.Run("in flight", func(t *testing.T) {
		l := &ckptLog{canSw: true} // unaligned from the start
		in := &inbox{data: newLane(8), prio: make(chan envelope, 4)}
		g := newGate(NewSDKStage(spec, &Output{}), &Output{}, func(BarrierID) {}, []int{0})
		g.cp, g.now, g.scan = l, func() time.Time { return gateT0 }, in.scan
		e := &edgeOut{lanes: []*lane{in.data}, prio: []chan envelope{in.prio}, chIdx: []int{0}}
		if err := e.send(ctx, 0, Message{Kind: KindData, Elems: [][]byte{big}}); err != nil {
			t.Fatal(err)
		}
		if err := e.sendBarrier(ctx, 0, 1); err != nil {
			t.Fatal(err)
		}
		if err := g.control(ctx, <-in.prio); err != nil {
			t.Fatal(err)
		}
		if len(l.done) != 1 || !l.done[0].Unaligned {
			t.Fatalf("records %+v, want one unaligned", l.done)
		}
		var kept [][]byte
		if err := DecodeInFlight(l.done[0].InFlight, func(_, _ int, elems [][]byte) error {
			kept = append(kept, elems...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(kept) != 1 {
			t.Fatalf("%d elements in flight, want 1", len(kept))
		}
		if got := fmt.Sprint(groupValues(t, out, kept[0])); got != wantGroup(500) {
			t.Errorf("the in-flight group holds %s, want all 500 values", got)
		}
	})

	t.Run("waiting for side inputs", func(t *testing.T) {
		s := NewSDKStage(spec, &Output{})
		if err := s.Process(ctx, 0, [][]byte{big}); err != nil {
			t.Fatal(err)
		}
		b, err := s.SnapshotState(1)
		if err != nil {
			t.Fatal(err)
		}
		var st sdkStageState
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Waiting) != 1 {
			t.Fatalf("%d elements waiting, want 1", len(st.Waiting))
		}
		if got := fmt.Sprint(groupValues(t, out, st.Waiting[0])); got != wantGroup(500) {
			t.Errorf("the waiting group holds %s, want all 500 values", got)
		}
		if len(s.waiting) != 1 || string(s.waiting[0]) != string(big) {
			t.Error("the snapshot changed the live element, which still reads its group by token")
		}
	})

	// Last: it releases the group. What replaces the element for good
	// (a stable-input stage's epochs in the store) gives its claim up.
	t.Run("kept for good", func(t *testing.T) {
		s := NewSDKStage(spec, &Output{})
		kept, err := s.Detach(0, [][]byte{big}, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(groupValues(t, out, kept[0])); got != wantGroup(500) {
			t.Errorf("the kept group holds %s, want all 500 values", got)
		}
		if n := store.(*state.Store).Held(); n != 0 {
			t.Errorf("%d groups still held, want the one released", n)
		}
		if side, err := s.Detach(1, [][]byte{big}, true); err != nil || string(side[0]) != string(big) {
			t.Errorf("side input detached: %v", err)
		}
	})
}
