package pgsink

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/joboptions"
	"github.com/weir-runner/weir/pgio"
	"github.com/weir-runner/weir/twophase"
)

// Connector runs pgio.WriteURN: an exactly-once PostgreSQL write on every
// subtask, each with its own connection. Without checkpoints it commits
// at the end of its input.
type Connector struct{}

var _ connector.Connector = Connector{}

// URN implements connector.Connector.
func (Connector) URN() string { return pgio.WriteURN }

// Decode implements connector.Connector: the payload, and one input of
// schema rows whose fields the configuration's renames and key fit (Plan).
// weir's expansion gives the write an output no transform reads
// (expansion.WrittenTag), so that Python's pre-optimization keeps it.
func (Connector) Decode(t *connector.Transform) (connector.Config, []error) {
	if err := t.Ports("a PostgreSQL write", 1, 0, 1); err != nil {
		return nil, []error{err}
	}
	for _, out := range t.Outputs() {
		if r := t.ReaderOf(out); r != "" {
			return nil, []error{fmt.Errorf("output PCollection %q is read by transform %q, but a PostgreSQL write outputs nothing", out, r)}
		}
	}
	pc, err := t.PColl(t.Inputs()[0])
	if err != nil {
		return nil, []error{err}
	}
	plan, errs := NewPlan(t.Payload(), t.Coder(pc.GetCoderId()), t.Name())
	if errs != nil {
		return nil, errs
	}
	return &stage{plan: plan, unbounded: pc.GetIsBounded() == pipepb.IsBounded_UNBOUNDED}, nil
}

// stage is a decoded PostgreSQL write.
type stage struct {
	plan      *Plan
	unbounded bool
}

// Placement implements connector.Config: the rows not yet committed wait
// in the store.
func (s *stage) Placement() connector.Placement { return connector.Placement{Store: true} }

// Build implements connector.Config.
func (s *stage) Build(b *connector.BuildContext) (connector.Node, error) {
	if len(b.Inputs) != 1 {
		return connector.Node{}, fmt.Errorf("postgres sink %s: %d inputs, want 1", b.Stage, len(b.Inputs))
	}
	if s.unbounded && !b.Job.Checkpoints() {
		b.Job.Warnf("postgres sink %s: without --%s rows are written when the input ends, and this input is unbounded: set a checkpoint interval to write as the job runs",
			b.Stage, joboptions.CheckpointInterval)
	}
	in := b.Inputs[0].Codec
	return connector.Node{NewOperator: func(sub int, _ *executor.Output) (executor.Operator, error) {
		sink := s.plan.NewSink(b.Stage, sub, in, b.Job.Retried())
		return &twophase.Driver{Sink: sink, Pending: twophase.NewPending(b.Store, b.Namespace(sub), fmt.Sprintf("%s[%d]", b.Stage, sub)),
			Name: sink.Name, OnRetry: b.Job.Retried()}, nil
	}}, nil
}
