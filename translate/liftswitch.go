package translate

import (
	"fmt"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Precombine is one lifted combine's precombine step within an SDK stage:
// the transform and the PCollections it reads and writes, whose element
// counts say how much it reduces.
type Precombine struct {
	Transform string
	Input     string
	Output    string
}

// precombines lists the precombine steps fused into stage s, or none when
// one of them may not be converted: the choice between the two compares
// element counts, which is fair only when each input is in one window.
// Under sliding windows a converted input is one element that the shuffle
// then holds once per window, while the precombine's output is already
// counted per window, so a precombine that looks barely worth it may still
// save most of the shuffle.
func (b *builder) precombines(s *Stage) []Precombine {
	if b.fixedPre {
		return nil
	}
	var out []Precombine
	for _, tid := range s.Transforms {
		t := b.comps.Transforms[tid]
		if t.GetSpec().GetUrn() != URNCombinePGBKCV {
			continue
		}
		in, o := t.GetInputs(), t.GetOutputs()
		pc := Precombine{Transform: tid, Input: in[sortedKeys(in)[0]], Output: o[sortedKeys(o)[0]]}
		if !oneWindowEach(b.comps, pc.Input) {
			return nil
		}
		out = append(out, pc)
	}
	return out
}

// oneWindowEach reports whether a PCollection's window function puts each
// element in one window.
func oneWindowEach(comps *pipepb.Components, pcoll string) bool {
	ws := comps.GetWindowingStrategies()[comps.GetPcollections()[pcoll].GetWindowingStrategyId()]
	switch ws.GetWindowFn().GetUrn() {
	case URNGlobalWindows, URNFixedWindows, URNSessions:
		return true
	}
	return false
}

// ConvertDescriptor builds the twin of an SDK stage's descriptor in which
// every precombine converts each input to an accumulator on its own instead
// of combining inputs of a key within the bundle
// (beam:transform:combine_per_key_convert_to_accumulators). Both emit
// accumulators in the same coder, so the runner may run any bundle on either
// and everything downstream is the same: the merge after the shuffle
// cannot tell them apart. The conversion is the cheaper of the two when
// keys seldom repeat within a bundle, where the precombine's cache only
// adds cost.
func (p *Plan) ConvertDescriptor(s *Stage, endpoint *pipepb.ApiServiceDescriptor) (*fnpb.ProcessBundleDescriptor, error) {
	if len(s.Precombines) == 0 {
		return nil, fmt.Errorf("translate: stage %s runs no precombine", s.ID)
	}
	d, err := p.Descriptor(s, endpoint)
	if err != nil {
		return nil, err
	}
	d.Id = string(s.ID) + "/convert"
	convertPrecombines(d, s)
	return d, nil
}

// convertPrecombines makes a descriptor of stage s convert where it
// precombines.
func convertPrecombines(d *fnpb.ProcessBundleDescriptor, s *Stage) {
	for _, pc := range s.Precombines {
		t := d.Transforms[pc.Transform]
		c := &pipepb.PTransform{UniqueName: t.GetUniqueName(), Inputs: t.GetInputs(), Outputs: t.GetOutputs(),
			EnvironmentId: t.GetEnvironmentId(), DisplayData: t.GetDisplayData(), Annotations: t.GetAnnotations(),
			Spec: &pipepb.FunctionSpec{Urn: URNCombineConvert, Payload: t.GetSpec().GetPayload()}}
		d.Transforms[pc.Transform] = c
	}
}
