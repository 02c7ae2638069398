package connector

import (
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/jobview"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/wire"
)

// BuildContext is what a Config's Build gets: the stage's place in the
// job, and the job's services.
type BuildContext struct {
	// Stage names the stage in messages (its first transform's unique
	// name); Transform is that transform's ID, which labels metrics.
	Stage, Transform string
	// Inputs are the stage's input ports, in port order; Outputs, the
	// number of its output ports.
	Inputs  []Port
	Outputs int
	// Store is the job's store. A stage whose Placement says Store keeps
	// each subtask's state under Namespace(subtask), which checkpoints
	// export and restores import.
	Store     *state.Store
	Namespace func(subtask int) string
	Job       Job
}

// Port is one input of a stage: how its elements are encoded.
type Port struct {
	// Codec reads the windowed values' headers and values.
	Codec *wire.Codec
	// Key measures the key of KV elements; nil for other elements.
	Key wire.Measure
}

// Job is what a stage may ask of the job it runs in.
type Job interface {
	// Warnf adds a warning to the job's messages.
	Warnf(format string, args ...any)
	// Retried returns a function that reports errors a connector retries
	// (a broker down) as job warnings: a new error at once, the same one
	// again at most every ten seconds.
	Retried() func(error)
	// Checkpoints says whether the job takes checkpoints. Without them
	// nothing is restored, and nothing completes: an exactly-once sink
	// commits at the end of its input only.
	Checkpoints() bool
	// Drain is closed when the job is drained: a source ends where it is.
	Drain() <-chan struct{}
	// Shared returns the value of key for this job, made by make on the
	// first call: what a connector's stages share (Kafka's alignment
	// groups span the job's sources).
	Shared(key any, make func() any) any
	// AddMetrics adds a source of the job's metrics, read at each sample.
	AddMetrics(func() []*pipepb.MonitoringInfo)
	// AddSplits adds what reports a source's splits to the job's view.
	AddSplits(SplitReporter)
}

// SplitReporter reports a source's splits (Kafka partitions) and
// alignment groups to the job's view.
type SplitReporter interface {
	// Splits returns each split's state; Partition.Source is the ID of
	// the source's transform, which the runner turns into its stage.
	Splits(now time.Time) []jobview.Partition
	Alignments() []jobview.Alignment
}

// Node is a stage's executor node: NewOperator for a stage with inputs,
// NewSource for one without. Each is called once per subtask.
type Node struct {
	NewOperator func(subtask int, out *executor.Output) (executor.Operator, error)
	NewSource   func(subtask int, out *executor.Output) (executor.Source, error)
}
