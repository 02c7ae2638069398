package translate

import (
	"fmt"
	"maps"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
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
	// Truncation is no leaf of the pipeline: it runs only when the job is
	// drained, on the restrictions left, before they are processed.
	truncated := pcoll("truncated", kvERS)
	b.truncates[ids[2]] = &Truncate{TransformID: step("Truncate", URNTruncateSized, sized, map[string]string{"out": truncated}),
		Input: sized, Output: truncated}
	delete(b.comps.Transforms, id)
	return ids
}

// Truncate is the truncation step of an SDF process stage: on drain, the
// restrictions left are passed through it so the SDF finishes.
type Truncate struct {
	TransformID string
	// Input is the stage's main input (sized restrictions); Output has the
	// same coder and windowing.
	Input, Output string
}

// TruncateDescriptor builds the process bundle descriptor that truncates
// the restrictions of SDF stage s: data source, truncate, data sink.
func (p *Plan) TruncateDescriptor(s *Stage, endpoint *pipepb.ApiServiceDescriptor) (*fnpb.ProcessBundleDescriptor, error) {
	tr := s.Truncate
	if tr == nil {
		return nil, fmt.Errorf("translate: stage %s processes no restrictions", s.ID)
	}
	in, ok := p.PColls[tr.Input]
	if !ok {
		return nil, fmt.Errorf("translate: stage %s: restrictions %q do not reach the runner", s.ID, tr.Input)
	}
	elem := p.elementCoder(in.ID)
	d := &fnpb.ProcessBundleDescriptor{
		Id:                        string(s.ID) + "/truncate",
		Transforms:                map[string]*pipepb.PTransform{tr.TransformID: p.Components.Transforms[tr.TransformID]},
		Pcollections:              map[string]*pipepb.PCollection{},
		WindowingStrategies:       p.Components.GetWindowingStrategies(),
		Coders:                    p.Components.GetCoders(),
		Environments:              p.Components.GetEnvironments(),
		StateApiServiceDescriptor: endpoint,
	}
	for _, id := range []string{tr.Input, tr.Output} {
		pc := proto.Clone(p.Components.Pcollections[id]).(*pipepb.PCollection)
		pc.CoderId = elem
		d.Pcollections[id] = pc
	}
	var err error
	if d.Transforms[TruncateSource], err = dataPort(URNDataSource, TruncateSource, tr.Input, in.WireCoder, endpoint); err != nil {
		return nil, err
	}
	if d.Transforms[TruncateSink], err = dataPort(URNDataSink, TruncateSink, tr.Output, in.WireCoder, endpoint); err != nil {
		return nil, err
	}
	return d, nil
}

// The data source and sink of truncation descriptors.
const (
	TruncateSource = "weir/truncate/source"
	TruncateSink   = "weir/truncate/sink"
)
