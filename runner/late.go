package runner

import (
	"fmt"
	"os"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"

	"github.com/weir-runner/weir/executor"
)

// openLateData makes the job's account of late data, with its dead letter
// if the job asks for one, and adds its metrics to the job's.
func openLateData(j *Job) (*executor.LateData, func(), error) {
	late := &executor.LateData{Logf: lateWarn(j)}
	opts, err := j.JobOptions()
	if err != nil {
		return nil, nil, err
	}
	var f *os.File
	if path := opts.DeadLetter; path != "" {
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
