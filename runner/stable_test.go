package runner

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"google.golang.org/protobuf/proto"
)

// What the DoFns of TestRequiresStableInput saw; LOOPBACK workers run in
// this process.
var (
	stableMu  sync.Mutex
	stableGot []int
)

func stableRecord(p int) {
	stableMu.Lock()
	defer stableMu.Unlock()
	stableGot = append(stableGot, p)
}

func stableSeen() []int {
	stableMu.Lock()
	defer stableMu.Unlock()
	return slices.Clone(stableGot)
}

func init() {
	register.Function1x0(stableRecord)
}

// requireStableInput marks the ParDo of stableRecord requires_stable_input,
// which the Go SDK cannot say.
func requireStableInput(t *testing.T) func(*pipepb.Pipeline) {
	return requireStableInputOf(t, "stableRecord")
}

// requireStableInputOf marks the ParDo whose name has fn in it
// requires_stable_input.
func requireStableInputOf(t *testing.T, fn string) func(*pipepb.Pipeline) {
	return func(p *pipepb.Pipeline) {
		for _, tr := range p.GetComponents().GetTransforms() {
			if !strings.Contains(tr.GetUniqueName(), fn) || tr.GetSpec().GetUrn() != "beam:transform:pardo:v1" {
				continue
			}
			var pl pipepb.ParDoPayload
			if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pl); err != nil {
				t.Error(err)
				return
			}
			pl.RequiresStableInput = true
			b, err := proto.Marshal(&pl)
			if err != nil {
				t.Error(err)
				return
			}
			tr.Spec.Payload = b
			p.Requirements = append(p.Requirements, "beam:requirement:pardo:stable_input:v1")
			return
		}
		t.Errorf("no %s ParDo in the pipeline", fn)
	}
}

// TestRequiresStableInput runs endlessFn's positions into a ParDo that
// requires stable input, with checkpoints every 50 ms: the ParDo sees input
// while the job runs (it is released as checkpoints complete), the
// checkpoints hold its pending input (its stage's operator is wrapped:
// without the wrapper the stage keeps nothing in the store), and after
// the drain it has seen every position exactly once. What it sees when
// is tested in twophase (TestStableInput).
func TestRequiresStableInput(t *testing.T) {
	testHookPipeline = requireStableInput(t)
	defer func() { testHookPipeline = nil }()
	stableMu.Lock()
	stableGot = nil
	stableMu.Unlock()
	dir := t.TempDir()
	for k, v := range map[string]string{CheckpointIntervalOption: "50ms", CheckpointDirOption: dir, CheckpointKeepOption: "100"} {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo0(s, stableRecord, beam.ParDo(s, &endlessFn{}, beam.Impulse(s)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Execute(ctx, p); done <- err }()
	job := waitRunning(ctx, t)
	for len(stableSeen()) == 0 {
		select {
		case err := <-done:
			t.Fatalf("the job ended early: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := inProcessServer().Drain(ctx, &jobpb.DrainJobRequest{JobId: string(job.ID)}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("drained job: %v", err)
	}
	got := stableSeen()
	slices.Sort(got)
	want := make([]int, 0, drainEnd-1)
	for i := 1; i < drainEnd; i++ {
		want = append(want, i)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the stable ParDo saw %d positions, want 1..%d each once", len(got), drainEnd-1)
	}
	sinkStateInCheckpoints(t, dir)
}
