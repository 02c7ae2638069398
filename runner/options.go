package runner

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/weir-runner/weir/translate"
)

// CombineLiftingOption turns combiner lifting off for a job when set to
// false. Lifting (precombine before the shuffle) pays when keys repeat; on
// near-unique keys the SDK encodes and decodes an accumulator per element
// for nothing (docs/benchmarks.md measures the difference).
const CombineLiftingOption = "weir_combine_lifting"

var _ = flag.Bool(CombineLiftingOption, true, "weir: run combines lifted (precombine before the shuffle); false runs them on grouped values")

// AdaptivePrecombineOption, set to false, keeps a job's lifted combines
// precombining in every bundle. By default a stage whose precombines do not
// reduce (keys seldom repeat within a bundle) converts each input to an
// accumulator on its own instead, and probes now and then whether that is
// still so (executor/liftswitch.go).
const AdaptivePrecombineOption = "weir_adaptive_precombine"

var _ = flag.Bool(AdaptivePrecombineOption, true, "weir: convert inputs to accumulators one by one where a combine's precombine does not reduce them; false always precombines")

// translateOptions reads the job's pipeline options that shape its plan,
// over the executor's defaults.
func translateOptions(j *Job, o translate.Options) (translate.Options, error) {
	if v := pipelineOption(j.Options, CombineLiftingOption); v != "" {
		lift, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("option --%s=%q: %w", CombineLiftingOption, v, err)
		}
		o.NoLift = !lift
	}
	if v := pipelineOption(j.Options, AdaptivePrecombineOption); v != "" {
		adaptive, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("option --%s=%q: %w", AdaptivePrecombineOption, v, err)
		}
		o.FixedPrecombine = !adaptive
	}
	return o, adaptiveUnlift(j, &o)
}

// SpreadWarningOption sets the watermark spread between the inputs of a
// stage fed by several (a join, a flatten) above which the job warns: the
// signal that one side is being replayed or backfilled alone. "0" turns
// the warning off.
const SpreadWarningOption = "weir_input_spread_warning"

// DefaultSpreadWarning is the spread warned about when a job does not say.
const DefaultSpreadWarning = 10 * time.Minute

var _ = flag.Duration(SpreadWarningOption, DefaultSpreadWarning, "weir: warn when the inputs of a join are this far apart in event time (0: never)")

func spreadWarning(j *Job) (time.Duration, error) {
	v := pipelineOption(j.Options, SpreadWarningOption)
	if v == "" {
		return DefaultSpreadWarning, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("option --%s=%q: want a duration such as 10m, or 0", SpreadWarningOption, v)
	}
	return d, nil
}

// positiveDuration reads v, the value of option name, into dst; an empty
// v leaves dst alone.
func positiveDuration(name, v string, dst *time.Duration) error {
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("option --%s=%q: want a positive duration such as 10s", name, v)
	}
	*dst = d
	return nil
}
