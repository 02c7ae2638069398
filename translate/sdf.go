package translate

import (
	"fmt"
	"maps"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// expandSDFs replaces each splittable ParDo with its three SDF steps: pair
// with restriction, split and size, and process sized element and
// restriction.
func (b *builder) expandSDFs(leaves []string) []string {
	out := make([]string, 0, len(leaves))
	for _, id := range leaves {
		t := b.comps.Transforms[id]
		pd := b.pardo(id)
		if t.GetSpec().GetUrn() != URNParDo || pd.GetRestrictionCoderId() == "" {
			out = append(out, id)
			continue
		}
		out = append(out, b.expandSDF(id, t, pd)...)
	}
	return out
}

func (b *builder) expandSDF(id string, t *pipepb.PTransform, pd *pipepb.ParDoPayload) []string {
	b.sdfSeq++
	local, in := b.mainInput(id)
	inPC := b.comps.Pcollections[in]
	kvER := b.addCoder(fmt.Sprintf("sdf%d_kv_elem_restriction", b.sdfSeq), "beam:coder:kv:v1", inPC.GetCoderId(), pd.GetRestrictionCoderId())
	size := b.addCoder(fmt.Sprintf("sdf%d_size", b.sdfSeq), "beam:coder:double:v1")
	kvERS := b.addCoder(fmt.Sprintf("sdf%d_kv_sized", b.sdfSeq), "beam:coder:kv:v1", kvER, size)

	pcoll := func(suffix, coder string) string {
		pid := fmt.Sprintf("%s/%s", in, suffix)
		b.comps.Pcollections[pid] = &pipepb.PCollection{
			UniqueName:          fmt.Sprintf("%s/%s", t.GetUniqueName(), suffix),
			CoderId:             coder,
			IsBounded:           inPC.GetIsBounded(),
			WindowingStrategyId: inPC.GetWindowingStrategyId(),
		}
		return pid
	}
	paired := pcoll("paired", kvER)
	sized := pcoll("sized", kvERS)

	step := func(suffix, urn, from string, outputs map[string]string) string {
		sid := id + "/" + suffix
		inputs := maps.Clone(t.GetInputs())
		inputs[local] = from
		b.comps.Transforms[sid] = &pipepb.PTransform{
			UniqueName:    t.GetUniqueName() + "/" + suffix,
			Spec:          &pipepb.FunctionSpec{Urn: urn, Payload: t.GetSpec().GetPayload()},
			Inputs:        inputs,
			Outputs:       outputs,
			EnvironmentId: t.GetEnvironmentId(),
		}
		return sid
	}
	ids := []string{
		step("PairWithRestriction", URNPairWithRestr, in, map[string]string{"out": paired}),
		step("SplitAndSize", URNSplitAndSize, paired, map[string]string{"out": sized}),
		step("Process", URNProcessSized, sized, t.GetOutputs()),
	}
	delete(b.comps.Transforms, id)
	return ids
}
