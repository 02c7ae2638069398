package runner

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/checkpoint"
)

type collectIntFn struct{ Run string }

func (f *collectIntFn) ProcessElement(v int) {
	collected.Lock()
	defer collected.Unlock()
	collected.runs[f.Run] = append(collected.runs[f.Run], fmt.Sprint(v))
}

func init() { register.DoFn1x0[int](&collectIntFn{}) }

// TestRestoreResumesSDF crashes (cancels, without a drain) an unbounded
// job whose SDF emits positions 1, 2, … into a group-by-key in the
// global window, once checkpoints hold the group's state, then starts it
// again and drains it. Only a restore that brings back both the SDF's
// residual (it resumes where it was: Impulse does not fire again) and
// the group's state gives each key's sum over exactly 1..drainEnd-1.
func TestRestoreResumesSDF(t *testing.T) {
	dir := t.TempDir()
	opts := map[string]string{CheckpointIntervalOption: "20ms", CheckpointDirOption: dir, CheckpointKeepOption: "10"}
	for k, v := range opts {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	setJobName(t, "restore-sdf")
	beam.Init()
	pipeline := func(run string) *beam.Pipeline {
		p, s := beam.NewPipelineWithRoot()
		out := beam.ParDo(s, &endlessFn{}, beam.Impulse(s))
		sums := beam.ParDo(s, sumGroup, beam.GroupByKey(s, beam.ParDo(s, modKey, out)))
		beam.ParDo0(s, &collectIntFn{Run: run}, sums)
		beam.ParDo0(s, &collectIntFn{Run: run + "-positions"}, out)
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	storage, err := checkpoint.OpenStorage(checkpoint.StorageOptions{Dir: dir, Keep: 100})
	if err != nil {
		t.Fatal(err)
	}
	// withState reports whether the newest checkpoint holds store records.
	withState := func() bool {
		c, _, err := storage.Latest()
		if err != nil {
			return false
		}
		for _, f := range c.Manifest.Files {
			if len(f.Name) > 4 && f.Name[len(f.Name)-4:] == ".sst" {
				return true
			}
		}
		return false
	}

	done := make(chan error, 1)
	go func() { _, err := Execute(ctx, pipeline("sdf-1")); done <- err }()
	job := waitRunning(ctx, t)
	for !withState() {
		sleepOrFail(ctx, t, done)
	}
	if _, err := inProcessServer().Cancel(ctx, &jobpb.CancelJobRequest{JobId: string(job.ID)}); err != nil {
		t.Fatal(err)
	}
	<-done
	if got := takeCollected("sdf-1"); len(got) > 0 {
		t.Fatalf("the global window fired before the drain: %v", got)
	}
	if got := takeCollected("sdf-1-positions"); !slices.Contains(got, "1") {
		t.Fatalf("the first run emitted positions %v, not 1", got)
	}

	go func() { _, err := Execute(ctx, pipeline("sdf-2")); done <- err }()
	job = waitRunningOther(ctx, t, job)
	if _, err := inProcessServer().Drain(ctx, &jobpb.DrainJobRequest{JobId: string(job.ID)}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("drained restored job: %v", err)
	}
	var want []string
	for k := range 5 {
		sum := 0
		for p := 1; p < drainEnd; p++ {
			if p%5 == k {
				sum += p
			}
		}
		want = append(want, fmt.Sprint(sum))
	}
	if !hasMessage(job, "restored from checkpoint") {
		t.Errorf("the second run did not restore")
	}
	// The checkpoint holds position 1 in the group's state: the SDF
	// resumed after it instead of starting over.
	if pos := takeCollected("sdf-2-positions"); len(pos) == 0 || slices.Contains(pos, "1") {
		t.Errorf("the restored SDF emitted %d positions, 1 among them: %v; want it to resume past 1", len(pos), pos)
	}
	got := takeCollected("sdf-2")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("sums per key %v, want %v", got, want)
	}
}

var flagSet = flag.Set

func setJobName(t *testing.T, name string) {
	t.Helper()
	if err := flagSet("job_name", name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { flagSet("job_name", "") })
}

// waitRunningOther waits for a running job other than prev.
func waitRunningOther(ctx context.Context, t *testing.T, prev *Job) *Job {
	t.Helper()
	for {
		if j := waitRunning(ctx, t); j != prev {
			return j
		}
		select {
		case <-ctx.Done():
			t.Fatal("the second run did not start")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
