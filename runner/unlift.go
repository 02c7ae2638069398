package runner

import (
	"fmt"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/translate"
)

// unliftSpecs registers the unlifted descriptors of the plan's combines
// that may run unlifted (translate.Unlift) and returns each stage's part,
// by stage. The PCollection from a producer to its group-by-key gets a
// codec that follows the combine's switch, so the producer's output, the
// group-by-key and its partitioning read raw values once it is unlifted.
func unliftSpecs(plan *translate.Plan, fn *fnapi.Server) (map[translate.StageID]*executor.UnliftSpec, error) {
	specs := map[translate.StageID]*executor.UnliftSpec{}
	byID := map[translate.StageID]*translate.Stage{}
	for _, s := range plan.Stages {
		byID[s.ID] = s
	}
	for _, u := range plan.Unlifts {
		sw := &executor.UnliftSwitch{}
		pd, err := plan.ProducerDescriptor(u, byID[u.Producer], fn.APIDescriptor())
		if err != nil {
			return nil, fmt.Errorf("combine %s: %w", u.Combine, err)
		}
		cons := byID[u.Consumer]
		cd, err := plan.ConsumerDescriptor(u, cons, fn.APIDescriptor(), false)
		if err != nil {
			return nil, fmt.Errorf("combine %s: %w", u.Combine, err)
		}
		fn.RegisterDescriptor(pd)
		fn.RegisterDescriptor(cd)
		specs[u.Producer] = &executor.UnliftSpec{Switch: sw, Descriptor: pd.GetId(), Producer: true}
		cs := &executor.UnliftSpec{Switch: sw, Descriptor: cd.GetId()}
		if len(cons.Precombines) > 0 {
			ccd, err := plan.ConsumerDescriptor(u, cons, fn.APIDescriptor(), true)
			if err != nil {
				return nil, fmt.Errorf("combine %s: %w", u.Combine, err)
			}
			fn.RegisterDescriptor(ccd)
			cs.ConvertDescriptor = ccd.GetId()
		}
		specs[u.Consumer] = cs
		acc := plan.PColls[u.Precombine.Output]
		acc.Codec = executor.UnliftCodec(sw, acc.Codec, u.Raw.Codec)
	}
	return specs, nil
}
