package runner

import (
	"flag"
	"fmt"
	"os"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/executor"
)

// DeadLetterOption is the pipeline option naming the file (JSON lines,
// appended to) where elements dropped as too late are written.
const DeadLetterOption = "weir_dead_letter"

// The flag makes the option settable on the command line of a Go pipeline
// run with --runner=weir; the Go SDK sends every set flag as an option.
var _ = flag.String(DeadLetterOption, "", "weir: append elements dropped as too late to this JSON-lines file")

// pipelineOption reads a pipeline option as the SDKs send it: Go's under
// beam:option:go_options:v1, the others as beam:option:NAME:v1 or NAME.
func pipelineOption(opts *structpb.Struct, name string) string {
	f := opts.GetFields()
	for _, k := range []string{"beam:option:" + name + ":v1", name} {
		if v := f[k].GetStringValue(); v != "" {
			return v
		}
	}
	goOpts := f["beam:option:go_options:v1"].GetStructValue().GetFields()["options"].GetStructValue()
	return goOpts.GetFields()[name].GetStringValue()
}

// openLateData makes the job's account of late data, with its dead letter
// if the job asks for one, and adds its metrics to the job's.
func openLateData(j *Job) (*executor.LateData, func(), error) {
	late := &executor.LateData{Logf: func(format string, args ...any) {
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, format, args...)
	}}
	var f *os.File
	if path := pipelineOption(j.Options, DeadLetterOption); path != "" {
		var err error
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("option --%s: %w", DeadLetterOption, err)
		}
		late.DeadLetter = f
	}
	j.Metrics.AddSource(late.MonitoringInfos)
	return late, func() {
		if err := late.Close(); err != nil {
			j.Logf(jobpb.JobMessage_JOB_MESSAGE_ERROR, "%v", err)
		}
		if f != nil {
			if err := f.Close(); err != nil {
				j.Logf(jobpb.JobMessage_JOB_MESSAGE_ERROR, "dead letter: %v", err)
			}
		}
	}, nil
}
