package translate

import (
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

func pairOne(w string) (string, int) { return w, 1 }

func sumValues(k string, vs func(*int) bool) (string, int) {
	n, v := 0, 0
	for vs(&v) {
		n += v
	}
	return k, n
}

func grouped(s beam.Scope) beam.PCollection {
	return beam.GroupByKey(s, beam.ParDo(s, pairOne, beam.CreateList(s, []string{"a", "b", "a"})))
}

// TestHeldOnlyWhereSDKsReadIt checks which group-by-key outputs may carry
// state-backed iterables: those read only as SDK main inputs, in
// environments that declare the coder; and that their readers' data
// sources are told the state-backed coder.
func TestHeldOnlyWhereSDKsReadIt(t *testing.T) {
	tests := []struct {
		name    string
		build   func(beam.Scope)
		noCap   bool
		readers int
	}{
		{"pardo", func(s beam.Scope) { beam.ParDo(s, sumValues, grouped(s)) }, false, 1},
		{"two readers", func(s beam.Scope) {
			g := grouped(s)
			beam.ParDo(s, sumValues, g)
			beam.ParDo(s, sumValues, g)
		}, false, 1}, // sibling readers share one stage
		{"no capability", func(s beam.Scope) { beam.ParDo(s, sumValues, grouped(s)) }, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pp := marshal(t, scoped(tc.build)())
			if tc.noCap {
				for _, env := range pp.GetComponents().GetEnvironments() {
					env.Capabilities = slices.DeleteFunc(env.Capabilities, func(c string) bool { return c == URNStateBackedIterable })
				}
			}
			plan, err := Build(pp, Options{})
			if err != nil {
				t.Fatal(err)
			}
			held := 0
			for _, s := range plan.Stages {
				if s.Kind != KindGBK {
					continue
				}
				pc := plan.PColls[s.Outputs[0]]
				if pc.HeldReaders == 0 {
					continue
				}
				held++
				if pc.HeldReaders != tc.readers {
					t.Errorf("%d readers, want %d", pc.HeldReaders, tc.readers)
				}
				checkSourceCoder(t, plan, pc)
			}
			if want := min(tc.readers, 1); held != want {
				t.Errorf("%d held outputs, want %d", held, want)
			}
		})
	}
}

// checkSourceCoder checks every reader of pc decodes it with a
// state-backed iterable.
func checkSourceCoder(t *testing.T, plan *Plan, pc *PColl) {
	t.Helper()
	for _, s := range plan.Stages {
		if s.Kind != KindSDK || s.MainInput() != pc.ID {
			continue
		}
		d, err := plan.Descriptor(s, &pipepb.ApiServiceDescriptor{Url: "x"})
		if err != nil {
			t.Fatal(err)
		}
		var port fnpb.RemoteGrpcPort
		if err := proto.Unmarshal(d.Transforms[s.Source].GetSpec().GetPayload(), &port); err != nil {
			t.Fatal(err)
		}
		cs := d.GetCoders()
		kv := cs[cs[port.GetCoderId()].GetComponentCoderIds()[0]]
		if urn := cs[kv.GetComponentCoderIds()[1]].GetSpec().GetUrn(); urn != URNStateBackedIterable {
			t.Errorf("stage %s decodes its grouped input with %s", s.Name, urn)
		}
	}
}

// TestHeldNotForOtherReaders: a grouped PCollection that some stage reads
// as a side input (the SDK's side input reader cannot follow a token), or
// that a runner stage reads, is never held. (The Go SDK builds neither
// pipeline, so the stages are made by hand.)
func TestHeldNotForOtherReaders(t *testing.T) {
	b := &builder{comps: &pipepb.Components{Environments: map[string]*pipepb.Environment{
		"go": {Capabilities: []string{URNStateBackedIterable}}}}}
	main := &Stage{Kind: KindSDK, EnvID: "go", Inputs: []Input{{PColl: "g"}}}
	side := &Stage{Kind: KindSDK, EnvID: "go", Inputs: []Input{{PColl: "x"}, {PColl: "g", Side: &SideInput{}}}}
	if !b.canReadHeld("g", []*Stage{main}) {
		t.Error("a main input in a capable environment cannot read held groups")
	}
	if b.canReadHeld("g", []*Stage{main, side}) {
		t.Error("held groups allowed with a side input reader")
	}
	flatten := &Stage{Kind: KindFlatten, Inputs: []Input{{PColl: "g"}}}
	if b.canReadHeld("g", []*Stage{main, flatten}) {
		t.Error("held groups allowed into a flatten")
	}
	sdf := &Stage{Kind: KindSDK, EnvID: "go", SDF: true, Inputs: []Input{{PColl: "g"}}}
	if b.canReadHeld("g", []*Stage{sdf}) {
		t.Error("held groups allowed into an SDF stage")
	}
}
