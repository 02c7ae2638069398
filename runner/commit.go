package runner

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/translate"
	"github.com/weir-runner/weir/twophase"
)

// Two-phase-commit sinks (exactly-once Kafka writes, file writes: their
// connectors' placement says Store) keep what they have not committed in
// the store under their subtask's namespace, so every snapshot holds it,
// and commit when a checkpoint completes: jobCheckpoints tells the graph,
// which tells each sink subtask in its own goroutine
// (executor.CheckpointListener).

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
// namespace: a connector's stage that says so (a two-phase-commit sink),
// or a stage with stable input.
func keepsPending(s *translate.Stage) bool { return placement(s).Store || s.StableInput }

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
