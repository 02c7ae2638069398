package runner

// A job speaks to two audiences. Its users read job messages (Logf), which
// the SDK that submitted it prints and GetMessageStream serves. The
// server's operator reads the server's log, where one job is a handful of
// lines among many: each record of a job carries its ID and name, and a
// warning carries where in the graph it arose, so the log can be filtered
// without parsing prose. Warn writes both from one call, so the two never
// say different things.

import (
	"fmt"
	"log/slog"
	"strings"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/translate"
)

// The attribute keys of the records a job writes to the server's log.
const (
	logJob       = "job"       // JobID
	logJobName   = "job_name"  // Job.Name
	logStage     = "stage"     // the stage's name, as metrics and weir checkpoints show it
	logSubtask   = "subtask"   // the subtask's index within its stage
	logTransform = "transform" // a transform's ID, as metrics label it
	logText      = "text"      // the job message a warning also wrote
)

// jobLogger is the logger of a job's records: the server's, with the job's
// ID and name on every record.
func jobLogger(server *slog.Logger, j *Job) *slog.Logger {
	return server.With(logJob, string(j.ID), logJobName, j.Name)
}

// Logger returns the logger of the job's records in the server's log:
// the server's logger with the job's ID and name as attributes. A job no
// Server has run logs nowhere.
func (j *Job) Logger() *slog.Logger { return j.log }

// Warn reports a warning to both of a job's audiences: its users get a
// job message of importance WARNING whose text is text, as Logf writes
// it; the server's log gets a record at level Warn of the job's Logger,
// whose message is msg (a constant, such as "weir: late data dropped")
// and whose attributes are args (slog's key-value pairs or Attrs, such as
// the stage and subtask where it arose) followed by the text.
func (j *Job) Warn(msg, text string, args ...any) {
	j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "%s", text)
	j.log.Warn(msg, append(args[:len(args):len(args)], logText, text)...)
}

// logState writes a change of the job's state to the server's log, at
// level Info: submitted (STARTING), running, and each state after; the
// terminal one with how long the job ran and, if it failed, its error.
func (j *Job) logState(st jobpb.JobState_Enum, err error) {
	switch {
	case st == jobpb.JobState_STARTING:
		j.log.Info("weir: job submitted")
	case st == jobpb.JobState_RUNNING:
		j.log.Info("weir: job running")
	case IsTerminal(st):
		args := []any{"state", st.String(), "duration", j.Ended().Sub(j.submitted)}
		if err != nil {
			args = append(args, "err", err)
		}
		j.log.Info("weir: job ended", args...)
	default:
		j.log.Info("weir: job "+strings.ToLower(st.String()), "state", st.String())
	}
}

// The warnings of a job's executor, each sent through Job.Warn with where
// it arose. Their texts are the executor's, unchanged.

// lateWarn is the Logf of a job's LateData: drops of late data, by
// transform.
func lateWarn(j *Job) func(t *executor.TransformLate, format string, args ...any) {
	return func(t *executor.TransformLate, format string, args ...any) {
		j.Warn("weir: late data dropped", fmt.Sprintf(format, args...), logStage, t.Name, logTransform, t.ID)
	}
}

// graphWarn is the Warn of a job's graph (the watermark spread between a
// stage's inputs), whose node i is plan.Stages[i].
func graphWarn(j *Job, plan *translate.Plan) func(node int, msg string) {
	return func(node int, msg string) {
		var args []any
		if node >= 0 && node < len(plan.Stages) {
			args = append(args, logStage, plan.Stages[node].Name)
		}
		j.Warn("weir: stage warning", msg, args...)
	}
}

// stageWarn is the Warn of an SDK stage (bundles retried after a lost
// worker, bundles that run on without finishing); sub < 0 when the
// subtask is not known.
func stageWarn(j *Job, stage string, sub int) func(msg string) {
	args := []any{logStage, stage}
	if sub >= 0 {
		args = append(args, logSubtask, sub)
	}
	return func(msg string) { j.Warn("weir: stage warning", msg, args...) }
}

// subtaskSpec returns the spec of subtask sub of SDK stage s: spec, but
// for a Warn that names the subtask. A shallow copy is enough: a spec is
// read-only once built, and what its pointers hold (lifting, unlifting,
// held input) every subtask of the stage shares by design.
func subtaskSpec(spec *executor.SDKStageSpec, j *Job, s *translate.Stage, sub int) *executor.SDKStageSpec {
	c := *spec
	c.Warn = stageWarn(j, s.Name, sub)
	return &c
}
