package translate

import (
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// TestFlattenRecodesInputs: a Flatten whose inputs are in other coders
// than its output (as Python's CoGroupByKey flattens tagged inputs into a
// union coder) gets, for each such input, an SDK-side Flatten fused with
// the input's producer that writes it in the output's coder; an input
// already in that coder is left alone, and the runner's Flatten reads only
// the output's coder.
func TestFlattenRecodesInputs(t *testing.T) {
	pp := marshal(t, scoped(func(s beam.Scope) {
		a := beam.ParDo(s.Scope("A"), func(x int) int { return x }, beam.Create(s, 1, 2))
		b := beam.ParDo(s.Scope("B"), func(x int) int { return x }, beam.Create(s, 3))
		beam.Flatten(s.Scope("Union"), a, b)
	})())
	comps := pp.GetComponents()
	var flatten *pipepb.PTransform
	for _, tr := range comps.GetTransforms() {
		if tr.GetSpec().GetUrn() == URNFlatten {
			flatten = tr
		}
	}
	if flatten == nil {
		t.Fatal("no flatten in the pipeline")
	}
	// The output takes a coder of its own; input "i0" keeps another.
	out := comps.Pcollections[onlyValue(flatten.GetOutputs())]
	comps.Coders["union"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "example:coder:union:v1"}}
	out.CoderId = "union"
	kept := flatten.GetInputs()["i1"]
	comps.Pcollections[kept].CoderId = "union"

	plan, err := Build(pp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var union *Stage
	recoders := 0
	for _, s := range plan.Stages {
		if s.Kind == KindFlatten {
			union = s
			continue
		}
		for _, id := range s.Transforms {
			if tr := plan.Components.GetTransforms()[id]; tr.GetSpec().GetUrn() == URNFlatten {
				recoders++
				if s.Kind != KindSDK || len(s.Transforms) < 2 {
					t.Errorf("recoding flatten %s in stage %s (%v) of %d transforms, want it fused into its producer's SDK stage", id, s.ID, s.Kind, len(s.Transforms))
				}
			}
		}
	}
	if recoders != 1 {
		t.Errorf("%d recoding flattens, want 1 (one input differs)", recoders)
	}
	if union == nil {
		t.Fatal("no runner flatten stage")
	}
	for _, in := range union.Inputs {
		if c := plan.Components.GetPcollections()[in.PColl].GetCoderId(); c != "union" {
			t.Errorf("runner flatten reads %s in coder %q, want the output's", in.PColl, c)
		}
	}
	if !slices.ContainsFunc(union.Inputs, func(in Input) bool { return in.PColl == kept }) {
		t.Errorf("input already in the output's coder was recoded too: inputs %v", union.Inputs)
	}
}
