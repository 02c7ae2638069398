package teststream

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/executor"
)

// stage is a decoded TestStream: its events, elements in the output's
// wire encoding.
type stage struct {
	events []executor.TestStreamEvent
}

// Events returns the events to replay.
func (s *stage) Events() []executor.TestStreamEvent { return s.events }

// Placement implements connector.Config: one subtask replays the events,
// and the whole job runs one subtask per stage, since a consumer's
// processing time is the minimum over its channels, and parallel subtasks
// would let elements sent before a processing-time advance reach a
// trigger after it.
func (s *stage) Placement() connector.Placement {
	return connector.Placement{Parallelism: 1, Serial: true}
}

// Build implements connector.Config. The source's synthetic processing
// time starts at the wall-clock time the job's graph is built, as
// Prism's does, so that processing-time timers an SDK sets from its own
// clock fall within the TestStream's advances.
func (s *stage) Build(*connector.BuildContext) (connector.Node, error) {
	src := &executor.TestStream{Start: mtime.Now(), Events: s.events}
	return connector.Node{NewSource: func(int, *executor.Output) (executor.Source, error) { return src, nil }}, nil
}
