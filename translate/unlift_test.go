package translate

import (
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// TestUnliftDescriptors checks the unlifted twins of a combine's producer
// and consumer: the producer loses its precombine and sends the combine's
// input to the shuffle; the consumer reads raw groups into the composite's
// own combining step instead of merging and extracting; the rest is as in
// the stages' own descriptors, and each is whole (every PCollection and
// coder it names, it defines).
func TestUnliftDescriptors(t *testing.T) {
	plan, err := Build(marshal(t, sumPerKeyPipeline()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unlifts) != 1 {
		t.Fatalf("%d combines may run unlifted, want 1", len(plan.Unlifts))
	}
	u := plan.Unlifts[0]
	stage := map[StageID]*Stage{}
	for _, s := range plan.Stages {
		stage[s.ID] = s
	}
	prod, gbk, cons := stage[u.Producer], stage[u.GroupByKey], stage[u.Consumer]
	if prod.Kind != KindSDK || gbk.Kind != KindGBK || cons.Kind != KindSDK || gbk.MainInput() != u.Precombine.Output {
		t.Fatalf("unlift %+v: stages %v, %v, %v", u, prod.Kind, gbk.Kind, cons.Kind)
	}
	ep := &pipepb.ApiServiceDescriptor{Url: "localhost:1"}

	own, err := plan.Descriptor(prod, ep)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := plan.ProducerDescriptor(u, prod, ep)
	if err != nil {
		t.Fatal(err)
	}
	sink := prod.Sinks[u.Precombine.Output]
	if _, ok := pd.GetTransforms()[u.Precombine.Transform]; ok {
		t.Errorf("unlifted producer still precombines")
	}
	if got := pd.GetTransforms()[sink].GetInputs()["in"]; got != u.Raw.ID || got != u.Precombine.Input {
		t.Errorf("unlifted producer's sink reads %q, want the precombine's input %q", got, u.Precombine.Input)
	}
	if c := portCoder(t, pd.GetTransforms()[sink]); c != u.Raw.WireCoder {
		t.Errorf("unlifted producer's sink writes in %q, want %q", c, u.Raw.WireCoder)
	}
	sameElsewhere(t, own, pd, u.Precombine.Transform, sink)
	whole(t, pd)

	own, err = plan.Descriptor(cons, ep)
	if err != nil {
		t.Fatal(err)
	}
	cd, err := plan.ConsumerDescriptor(u, cons, ep, false)
	if err != nil {
		t.Fatal(err)
	}
	comb := cd.GetTransforms()[u.combine]
	if comb == nil || comb.GetInputs()[sortedKeys(comb.GetInputs())[0]] != u.Grouped.ID {
		t.Fatalf("unlifted consumer's combining step %v does not read %s", comb, u.Grouped.ID)
	}
	if c := portCoder(t, cd.GetTransforms()[cons.Source]); c != u.Grouped.WireCoder && c != u.Grouped.SourceCoder {
		t.Errorf("unlifted consumer reads in %q, want %q", c, u.Grouped.WireCoder)
	}
	sameElsewhere(t, own, cd, u.merge, u.extract, u.combine, cons.Source)
	whole(t, cd)
}

// TestNoUnlift lists combines that must stay lifted.
func TestNoUnlift(t *testing.T) {
	sliding := func() *beam.Pipeline {
		p, s := beam.NewPipelineWithRoot()
		kvs := beam.ParDo(s, func(x int) (string, int) { return "k", x }, beam.Create(s, 1, 2, 3))
		stats.SumPerKey(s, beam.WindowInto(s, window.NewSlidingWindows(time.Minute, 5*time.Minute), kvs))
		return p
	}
	for _, tc := range []struct {
		name      string
		p         *beam.Pipeline
		opts      Options
		unbounded bool
	}{
		{"option off", sumPerKeyPipeline(), Options{NoUnlift: true}, false},
		{"precombining fixed", sumPerKeyPipeline(), Options{FixedPrecombine: true}, false},
		{"unbounded input", sumPerKeyPipeline(), Options{}, true},
		{"sliding windows", sliding(), Options{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pp := marshal(t, tc.p)
			if tc.unbounded {
				for _, pc := range pp.GetComponents().GetPcollections() {
					pc.IsBounded = pipepb.IsBounded_UNBOUNDED
				}
			}
			plan, err := Build(pp, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unlifts) != 0 {
				t.Errorf("%d combines may run unlifted, want none", len(plan.Unlifts))
			}
		})
	}
}

func portCoder(t *testing.T, tr *pipepb.PTransform) string {
	t.Helper()
	var port fnpb.RemoteGrpcPort
	if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &port); err != nil {
		t.Fatal(err)
	}
	return port.GetCoderId()
}

// sameElsewhere checks that the transforms of two descriptors differ only
// in those listed.
func sameElsewhere(t *testing.T, a, b *fnpb.ProcessBundleDescriptor, except ...string) {
	t.Helper()
	skip := map[string]bool{}
	for _, id := range except {
		skip[id] = true
	}
	for _, d := range []*fnpb.ProcessBundleDescriptor{a, b} {
		for id := range d.GetTransforms() {
			if !skip[id] && !proto.Equal(a.GetTransforms()[id], b.GetTransforms()[id]) {
				t.Errorf("transform %s differs: %v vs %v", id, a.GetTransforms()[id], b.GetTransforms()[id])
			}
		}
	}
}

// whole checks that a descriptor defines every PCollection its transforms
// name, with a coder it defines.
func whole(t *testing.T, d *fnpb.ProcessBundleDescriptor) {
	t.Helper()
	for id, tr := range d.GetTransforms() {
		for _, m := range []map[string]string{tr.GetInputs(), tr.GetOutputs()} {
			for _, pc := range m {
				p, ok := d.GetPcollections()[pc]
				if !ok {
					t.Errorf("transform %s names PCollection %s, which the descriptor lacks", id, pc)
					continue
				}
				if _, ok := d.GetCoders()[p.GetCoderId()]; !ok {
					t.Errorf("PCollection %s has coder %s, which the descriptor lacks", pc, p.GetCoderId())
				}
			}
		}
	}
}
