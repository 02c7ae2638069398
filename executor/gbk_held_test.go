package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/wire"
)

// heldCodecs are the codecs of a group-by-key of KV<bytes, bytes> in the
// global window: its input, and its output KV<bytes, iterable<bytes>>.
func heldCodecs(t *testing.T) (in, out *wire.Codec) {
	t.Helper()
	c := func(urn string, comps ...string) *pipepb.Coder {
		return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
	}
	cs := map[string]*pipepb.Coder{"b": c(wire.URNBytes), "kv": c(wire.URNKV, "b", "b"),
		"it": c(wire.URNIterable, "b"), "kvit": c(wire.URNKV, "b", "it"), "gw": c(wire.URNGlobalWindow)}
	m := func(id string) wire.Measure {
		f, err := wire.MeasureFor(cs, id)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	return wire.NewCodec(m("gw"), m("kv")), wire.NewCodec(m("gw"), m("kvit"))
}

func lp(s string) []byte { return append([]byte{byte(len(s))}, s...) }

// groupInput makes n values of key big and 3 of key small, each value 7
// bytes encoded.
func groupInput(n int) [][]byte {
	var elems [][]byte
	add := func(k string, i int) {
		val := append(lp(k), lp(fmt.Sprintf("v%05d", i))...)
		elems = append(elems, wire.AppendWindowedValue(nil, mtime.Time(i), nil, []byte{wire.PaneNoFiring}, val))
	}
	for i := range n {
		add("big", i)
	}
	for i := range 3 {
		add("small", i)
	}
	return elems
}

// gbkNode is a one-subtask group-by-key whose shuffle holds groups above
// 100 bytes for one reader.
func gbkNode(store *state.Store, in *wire.Codec) *Node {
	return &Node{Name: "gbk", Parallelism: 1, Outputs: 1, Inputs: []NodeInput{{From: 0}},
		New: func(_ int, out *Output) (Operator, error) {
			sh := store.NewShuffle("gbk/0")
			sh.Hold(state.HoldOptions{Above: 100, Readers: 1})
			return &GroupByKey{Name: "gbk", In: in, Key: lpMeasure, Buf: sh, Out: out}, nil
		}}
}

func memStateStore(t *testing.T) *state.Store {
	t.Helper()
	store, err := state.Open(state.Options{Dir: "held", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// readHeld reads a held group through a stage's state handler, as the
// SDK does: page after page, following continuation tokens.
func readHeld(h *stageState, token []byte) ([]byte, int, error) {
	var all, cont []byte
	for pages := 1; ; pages++ {
		resp, err := h.HandleState(&fnpb.StateRequest{
			StateKey: &fnpb.StateKey{Type: &fnpb.StateKey_Runner_{Runner: &fnpb.StateKey_Runner{Key: token}}},
			Request:  &fnpb.StateRequest_Get{Get: &fnpb.StateGetRequest{ContinuationToken: cont}}})
		if err != nil {
			return nil, pages, err
		}
		all = append(all, resp.GetGet().GetData()...)
		if cont = resp.GetGet().GetContinuationToken(); cont == nil {
			return all, pages, nil
		}
	}
}

// TestGroupByKeyHandsOutLargeGroupsByToken groups one large and one small
// key: the large group arrives as a state-backed iterable whose values,
// inline then read through the stage's state handler, are all there in
// order; once released, its token is refused with an error naming the
// stage.
func TestGroupByKeyHandsOutLargeGroupsByToken(t *testing.T) {
	in, out := heldCodecs(t)
	store := memStateStore(t)
	var mu sync.Mutex
	var got [][]byte
	g := &Graph{Nodes: []*Node{
		{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return listSource(groupInput(500)), nil }},
		gbkNode(store, in),
		{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{From: 1}},
			New: func(int, *Output) (Operator, error) { return collect{&mu, &got}, nil }},
	}}
	ctx := context.Background()
	if err := g.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	h := &stageState{side: &sideState{stage: "consumer"},
		held: &heldState{stage: "consumer", in: &HeldInput{Store: store, Codec: out, Key: lpMeasure, PageSize: 1000}}}
	var token []byte
	for _, e := range got {
		tok, ok, err := h.held.token(e)
		if err != nil {
			t.Fatal(err)
		}
		wv, _, err := out.Decode(e, nil)
		if err != nil {
			t.Fatal(err)
		}
		k, it, _ := wire.SplitKV(lpMeasure, wv.Value)
		if string(k) != string(lp("big")) {
			if ok {
				t.Errorf("group %q was held", k)
			}
			continue
		}
		if !ok {
			t.Fatal("the large group was not held")
		}
		token = tok
		// Inline: the -1 marker, a count, the values; then the token.
		inline := it[4 : len(it)-len(tok)-11]
		n, w := int(inline[0]), 1
		rest, pages, err := readHeld(h, tok)
		if err != nil {
			t.Fatal(err)
		}
		values := append(append([]byte(nil), inline[w:]...), rest...)
		if want := 500 * 7; len(values) != want || n != 14 {
			t.Fatalf("%d inline values, %d bytes in all; want 14 and %d", n, len(values), want)
		}
		for i := range 500 {
			if v := string(values[i*7 : i*7+7]); v != string(lp(fmt.Sprintf("v%05d", i))) {
				t.Fatalf("value %d is %q", i, v)
			}
		}
		if pages != 4 {
			t.Errorf("%d pages of 1000 bytes for 3402 bytes, want 4", pages)
		}
	}
	if err := h.held.release(got); err != nil {
		t.Fatal(err)
	}
	_, _, err := readHeld(h, token)
	if err == nil || !strings.Contains(err.Error(), "stage consumer") || !errors.Is(err, state.ErrReleased) {
		t.Errorf("read after release: %v; want ErrReleased naming stage consumer", err)
	}
}

type failingStore struct{}

func (failingStore) ReadHeld([]byte, []byte, int) ([]byte, []byte, error) {
	return nil, nil, errors.New("disk on fire")
}
func (failingStore) EachHeld([]byte, func([]byte) error) error { return errors.New("disk on fire") }
func (failingStore) Release([]byte) error                      { return nil }

// TestHeldReadFailureNamesStage: a store that cannot read answers the SDK
// with an error naming the stage and the cause, which fails its bundle.
func TestHeldReadFailureNamesStage(t *testing.T) {
	_, out := heldCodecs(t)
	h := &stageState{side: &sideState{stage: "consumer"},
		held: &heldState{stage: "consumer", in: &HeldInput{Store: failingStore{}, Codec: out, Key: lpMeasure}}}
	_, _, err := readHeld(h, []byte("token"))
	if err == nil || !strings.Contains(err.Error(), "stage consumer") || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("got %v, want the stage and the cause", err)
	}
	h.held = nil
	if _, _, err := readHeld(h, []byte("token")); err == nil || !strings.Contains(err.Error(), "stage consumer") {
		t.Errorf("stage without held input: %v, want an error naming it", err)
	}
}

// TestSDKStageReleasesHeldGroupOnceCommitted runs a held group into an SDK
// stage whose first worker crashes: the retried bundle still finds the
// group, and the group is released once, after the bundle succeeded.
func TestSDKStageReleasesHeldGroupOnceCommitted(t *testing.T) {
	in, out := heldCodecs(t)
	store := memStateStore(t)
	srv, err := fnapi.NewServer(fnapi.Options{JobID: "job"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rec := &recordingStore{Store: store}
	spec := &SDKStageSpec{Name: "stage", Env: "env", DescriptorID: "d", Source: "src",
		Sinks: []string{"sink"}, SinkCodecs: []*wire.Codec{out},
		Workers: &fakeWorkers{t: t, srv: srv, crashes: 1},
		Held:    &HeldInput{Store: rec, Codec: out, Key: lpMeasure}}
	var mu sync.Mutex
	var got [][]byte
	g := &Graph{Nodes: []*Node{
		{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return listSource(groupInput(100)), nil }},
		gbkNode(store, in),
		{Name: "sdk", Parallelism: 1, Outputs: 1, Inputs: []NodeInput{{From: 1}},
			New: func(_ int, out *Output) (Operator, error) { return NewSDKStage(spec, out), nil }},
		{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{From: 2}},
			New: func(int, *Output) (Operator, error) { return collect{&mu, &got}, nil }},
	}}
	ctx := context.Background()
	if err := g.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d groups came through, want 2", len(got))
	}
	if rec.released != 1 || store.Held() != 0 {
		t.Errorf("%d releases, %d groups still held; want 1 and 0", rec.released, store.Held())
	}
}

// recordingStore counts releases.
type recordingStore struct {
	*state.Store
	released int
}

func (r *recordingStore) Release(token []byte) error {
	r.released++
	return r.Store.Release(token)
}
