package runner

import (
	"fmt"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/connector/all"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/translate"
)

// Connectors' stages (Kafka, files, TestStream: connector/all) are built
// here, the same way for all: the runner knows no connector by name.

// connectors returns the runner-native transforms jobs may use.
func connectors() *connector.Registry { return all.Registry() }

// testHookSource, if set, is handed each source a connector's stage makes,
// before it runs (crash tests set a TestStream's Before).
var testHookSource func(*Job, executor.Source)

// nativeNode makes n run the connector stage s: its placement, then the
// operator or source its Build returns. A source's output is where event
// time enters the job, so its arrival delay is recorded.
func nativeNode(n *executor.Node, s *translate.Stage, plan *translate.Plan, store *state.Store, svc *jobServices, late *executor.LateData) error {
	b := &connector.BuildContext{Stage: s.Name, Transform: s.Transforms[0], Outputs: len(s.Outputs),
		Store: store, Namespace: func(sub int) string { return stageNamespace(s, sub) }, Job: svc}
	for _, in := range s.Inputs {
		pc := plan.PColls[in.PColl]
		b.Inputs = append(b.Inputs, connector.Port{Codec: pc.Codec, Key: pc.Key})
	}
	node, err := s.Native.Build(b)
	if err != nil {
		return err
	}
	if p := s.Native.Placement(); p.Parallelism > 0 {
		n.Parallelism = p.Parallelism
	}
	switch {
	case len(n.Inputs) == 0 && node.NewSource != nil:
		n.NewSource = func(sub int, out *executor.Output) (executor.Source, error) {
			src, err := node.NewSource(sub, out)
			if err == nil && testHookSource != nil {
				testHookSource(svc.j, src)
			}
			return src, err
		}
		n.Arrivals = late.Source(s.Transforms[0], s.Name)
	case len(n.Inputs) > 0 && node.NewOperator != nil:
		n.New = node.NewOperator
	default:
		return fmt.Errorf("stage %s (%s): its connector built no %s", s.Name, s.URN,
			map[bool]string{true: "source", false: "operator"}[len(n.Inputs) == 0])
	}
	return nil
}

// placement returns a connector stage's placement; the zero placement for
// other stages.
func placement(s *translate.Stage) connector.Placement {
	if s.Kind != translate.KindNative {
		return connector.Placement{}
	}
	return s.Native.Placement()
}

// jobServices is what a job offers its connectors' stages
// (connector.Job), for one run of its graph.
type jobServices struct {
	j      *Job
	mu     sync.Mutex
	shared map[any]any
	splits []connector.SplitReporter
}

func newJobServices(j *Job) *jobServices { return &jobServices{j: j, shared: map[any]any{}} }

var _ connector.Job = (*jobServices)(nil)

// Warnf implements connector.Job.
func (s *jobServices) Warnf(format string, args ...any) {
	s.j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, format, args...)
}

// Retried implements connector.Job: each new error at once, a repeated
// one at most every ten seconds, so a broker that stays down is visible
// without flooding the job's messages.
func (s *jobServices) Retried() func(error) {
	var mu sync.Mutex
	var last string
	var at time.Time
	return func(err error) {
		mu.Lock()
		defer mu.Unlock()
		msg := err.Error()
		if msg == last && time.Since(at) < 10*time.Second {
			return
		}
		last, at = msg, time.Now()
		s.Warnf("%s", msg)
	}
}

// Checkpoints implements connector.Job.
func (s *jobServices) Checkpoints() bool { return takesCheckpoints(s.j) }

// Drain implements connector.Job.
func (s *jobServices) Drain() <-chan struct{} { return s.j.DrainRequested() }

// Shared implements connector.Job.
func (s *jobServices) Shared(key any, make func() any) any {
	s.mu.Lock()
	v, ok := s.shared[key]
	s.mu.Unlock()
	if ok {
		return v
	}
	// Made outside the lock: make may call AddMetrics and AddSplits. The
	// graph is built by one goroutine, so no other make races it.
	v = make()
	s.mu.Lock()
	s.shared[key] = v
	s.mu.Unlock()
	return v
}

// AddMetrics implements connector.Job.
func (s *jobServices) AddMetrics(f func() []*pipepb.MonitoringInfo) { s.j.Metrics.AddSource(f) }

// AddSplits implements connector.Job: the job's view shows the splits
// from its next sample.
func (s *jobServices) AddSplits(r connector.SplitReporter) {
	s.mu.Lock()
	s.splits = append(s.splits, r)
	splits := append([]connector.SplitReporter(nil), s.splits...)
	s.mu.Unlock()
	s.j.splits.Store(&splits)
}
