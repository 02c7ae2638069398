package runner

import (
	"flag"
	"time"

	"github.com/weir-runner/weir/joboptions"
	"github.com/weir-runner/weir/translate"
)

// A job's options are declared, parsed and validated in package
// joboptions; a job reads them typed, through Job.JobOptions. The names
// here are the declaration's, kept under the names the runner's callers
// and tests know.
const (
	DeadLetterOption                  = joboptions.DeadLetter
	CombineLiftingOption              = joboptions.CombineLifting
	AdaptivePrecombineOption          = joboptions.AdaptivePrecombine
	AdaptiveUnliftOption              = joboptions.AdaptiveUnlift
	SpreadWarningOption               = joboptions.InputSpreadWarning
	InlineGroupOption                 = joboptions.InlineGroupBytes
	SourceParallelismOption           = joboptions.SourceParallelism
	MaxBundleElementsOption           = joboptions.MaxBundleElements
	MaxBundleBytesOption              = joboptions.MaxBundleBytes
	MaxBundleTimeOption               = joboptions.MaxBundleTime
	CheckpointIntervalOption          = joboptions.CheckpointInterval
	CheckpointDirOption               = joboptions.CheckpointDir
	CheckpointModeOption              = joboptions.CheckpointMode
	CheckpointAlignedTimeoutOption    = joboptions.CheckpointAlignedTimeout
	CheckpointTimeoutOption           = joboptions.CheckpointTimeout
	CheckpointTolerableFailuresOption = joboptions.CheckpointTolerableFailures
	CheckpointKeepOption              = joboptions.CheckpointKeep
	RestoreOption                     = joboptions.Restore
	SavepointOption                   = joboptions.Savepoint
	SavepointRenameOption             = joboptions.SavepointRename
	SavepointAllowDroppedOption       = joboptions.SavepointAllowDroppedState
)

// Go pipelines parse their flags before they submit, and the Go SDK sends
// every flag set as a pipeline option: the flags make --weir_... known to a
// Go pipeline that imports the runner.
func init() { joboptions.RegisterFlags(flag.CommandLine) }

// DefaultSpreadWarning is the spread warned about when a job does not say.
var DefaultSpreadWarning = joboptions.Defaults().InputSpreadWarning

// translateOptions reads the job's pipeline options that shape its plan,
// over the executor's defaults: an option overrides a server's default only
// when the job sets it.
func translateOptions(j *Job, o translate.Options) (translate.Options, error) {
	opts, err := j.JobOptions()
	if err != nil {
		return o, err
	}
	if opts.IsSet(joboptions.CombineLifting) {
		o.NoLift = !opts.CombineLifting
	}
	if opts.IsSet(joboptions.AdaptivePrecombine) {
		o.FixedPrecombine = !opts.AdaptivePrecombine
	}
	if opts.IsSet(joboptions.AdaptiveUnlift) {
		o.NoUnlift = !opts.AdaptiveUnlift
	}
	o.SourceParallelism = opts.SourceParallelism
	return o, nil
}

// spreadWarning is the job's SpreadWarningOption.
func spreadWarning(j *Job) (time.Duration, error) {
	opts, err := j.JobOptions()
	if err != nil {
		return 0, err
	}
	return opts.InputSpreadWarning, nil
}
