package runner

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/weir-runner/weir/translate"
)

// CombineLiftingOption turns combiner lifting off for a job when set to
// false. Lifting (precombine before the shuffle) pays when keys repeat; on
// near-unique keys the SDK encodes and decodes an accumulator per element
// for nothing (docs/benchmarks.md measures the difference).
const CombineLiftingOption = "weir_combine_lifting"

var _ = flag.Bool(CombineLiftingOption, true, "weir: run combines lifted (precombine before the shuffle); false runs them on grouped values")

// translateOptions reads the job's pipeline options that shape its plan,
// over the executor's defaults.
func translateOptions(j *Job, noLift bool) (translate.Options, error) {
	o := translate.Options{NoLift: noLift}
	if v := pipelineOption(j.Options, CombineLiftingOption); v != "" {
		lift, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("option --%s=%q: %w", CombineLiftingOption, v, err)
		}
		o.NoLift = !lift
	}
	return o, nil
}
