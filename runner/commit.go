package runner

import (
	"fmt"
	"sort"
	"strings"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/filesink"
	"github.com/weir-runner/weir/kafka"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/translate"
	"github.com/weir-runner/weir/twophase"
)

// Two-phase-commit sinks (exactly-once Kafka writes, file writes) keep
// what they have not committed in the store under their subtask's
// namespace, so every snapshot holds it, and commit when a checkpoint
// completes: jobCheckpoints tells the graph, which tells each sink
// subtask in its own goroutine (executor.CheckpointListener).

// completed tells the sinks that checkpoint id is complete: its manifest
// is written and its folder renamed, so a restore would start from it.
// It never blocks (the driver calls it holding its lock).
func (c *jobCheckpoints) completed(id checkpoint.ID) {
	if c.graph != nil {
		c.graph.CheckpointComplete(executor.BarrierID(id))
	}
}

// testHookPipeline, if set, may change each job's pipeline before it is
// translated: tests set what the Go SDK cannot (requires_stable_input).
var testHookPipeline func(*pipepb.Pipeline)

// keepsPending reports whether s keeps uncommitted data in its store
// namespace: a two-phase-commit sink, or a stage with stable input.
func keepsPending(s *translate.Stage) bool { return twoPhase(s) || s.StableInput }

// stableInput makes the SDK stage s see only main input a completed
// checkpoint covers (requires_stable_input), when the job takes
// checkpoints. Without them nothing is ever restored, and within a run a
// failed bundle is retried from its retained input, so the input is
// stable already.
func stableInput(n *executor.Node, s *translate.Stage, store *state.Store, j *Job) {
	if !s.StableInput || !takesCheckpoints(j) {
		return
	}
	newOp := n.New
	n.New = func(sub int, out *executor.Output) (executor.Operator, error) {
		op, err := newOp(sub, out)
		if err != nil {
			return nil, err
		}
		inner, ok := op.(twophase.StableOperator)
		if !ok {
			return nil, fmt.Errorf("stage %s: requires stable input, but its operator %T cannot be wrapped", s.Name, op)
		}
		return &twophase.StableInput{Inner: inner, Main: 0,
			Pending: twophase.NewPending(store, stageNamespace(s, sub), fmt.Sprintf("%s[%d] (stable input)", s.Name, sub))}, nil
	}
}

// takesCheckpoints says whether the job's options ask for checkpoints.
func takesCheckpoints(j *Job) bool {
	opts, err := j.JobOptions()
	return err == nil && opts.CheckpointInterval > 0
}

// twoPhase reports whether s is a sink that commits on checkpoints.
func twoPhase(s *translate.Stage) bool {
	return s.Kind == translate.KindFileWrite || (s.Kind == translate.KindKafkaWrite && s.KafkaWrite.IsExactlyOnce())
}

// twoPhaseNode makes n run the two-phase-commit sink s. An exactly-once
// Kafka write needs checkpoints: without them its records would wait for
// the end of the input, forever in a streaming job, so the job is refused.
// A file write commits at the end of the input when there are none.
func twoPhaseNode(n *executor.Node, s *translate.Stage, plan *translate.Plan, store *state.Store, j *Job) error {
	in, ok := plan.PColls[s.MainInput()]
	if !ok {
		return fmt.Errorf("stage %s: no input", s.Name)
	}
	warn := sinkWarnings(j)
	switch s.Kind {
	case translate.KindKafkaWrite:
		if !takesCheckpoints(j) {
			return fmt.Errorf("kafka sink %s: semantic %q needs checkpoints: set --%s (or write at least once)",
				s.Name, s.KafkaWrite.Semantic, CheckpointIntervalOption)
		}
		if unknown := kafka.UnknownProducerKeys(s.KafkaWrite); len(unknown) > 0 {
			sort.Strings(unknown)
			j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "kafka sink %s: producer_config keys %s are not used by weir", s.Name, strings.Join(unknown, ", "))
		}
		// Not the job's name by default: Go pipelines name jobs with a
		// timestamp, so a restored job would look for its marker under
		// another group and commit again. A second job writing with the
		// same id fences the first, which then fails loudly; markers of
		// another run are told apart by the run token.
		prefix := s.KafkaWrite.TransactionalID
		if prefix == "" {
			prefix = "weir-" + s.KafkaWrite.Topic + "-" + s.Name
		}
		n.New = func(sub int, _ *executor.Output) (executor.Operator, error) {
			name := fmt.Sprintf("%s[%d]", s.Name, sub)
			w, err := kafka.NewTxnWriter(s.KafkaWrite, kafka.TxnOptions{Name: name, TransactionalID: fmt.Sprintf("%s-%d", prefix, sub)})
			if err != nil {
				return nil, err
			}
			return &twophase.Driver{Sink: &kafka.TxnSink{Writer: w, In: in.Codec},
				Pending: twophase.NewPending(store, stageNamespace(s, sub), name),
				Name:    fmt.Sprintf("kafka sink %s: topic %q", name, s.KafkaWrite.Topic), OnRetry: warn}, nil
		}
	case translate.KindFileWrite:
		n.New = func(sub int, _ *executor.Output) (executor.Operator, error) {
			name := fmt.Sprintf("%s[%d]", s.Name, sub)
			return &twophase.Driver{Sink: &filesink.Sink{Config: s.FileWrite, Name: s.Name, Subtask: sub, In: in.Codec},
				Pending: twophase.NewPending(store, stageNamespace(s, sub), name),
				Name:    fmt.Sprintf("file sink %s: dir %q", name, s.FileWrite.Dir), OnRetry: warn}, nil
		}
	default:
		return fmt.Errorf("stage %s: %v is not a two-phase-commit sink", s.Name, s.Kind)
	}
	return nil
}

// sinkWarnings turns the commits sinks retry into job warnings.
func sinkWarnings(j *Job) func(error) {
	return func(err error) { j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "%v", err) }
}
