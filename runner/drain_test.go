package runner

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
)

// endlessFn emits its positions one bundle at a time, from 1 for ever: it
// claims a position, emits it and checkpoints. Drained, it truncates its
// restriction to end before drainEnd, so a drained job's output is exactly
// 1..drainEnd-1 however far it got before the drain.
type endlessFn struct{}

const drainEnd = 300

func (*endlessFn) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 1, End: math.MaxInt64}
}

func (*endlessFn) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (*endlessFn) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 { return r.Size() }

func (*endlessFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

func (*endlessFn) TruncateRestriction(_ context.Context, rt *sdf.LockRTracker, _ []byte) offsetrange.Restriction {
	r := rt.GetRestriction().(offsetrange.Restriction)
	return offsetrange.Restriction{Start: r.Start, End: min(r.End, drainEnd)}
}

func (*endlessFn) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func(int)) sdf.ProcessContinuation {
	p := rt.GetRestriction().(offsetrange.Restriction).Start
	if !rt.TryClaim(p) {
		return sdf.StopProcessing()
	}
	emit(int(p))
	return sdf.ResumeProcessingIn(20 * time.Millisecond)
}

func init() {
	register.DoFn3x1[*sdf.LockRTracker, []byte, func(int), sdf.ProcessContinuation](&endlessFn{})
}

// TestDrainTruncatesAndEndsDrained drains an unbounded pipeline through the
// job API: the SDF's restriction is truncated, what is left runs, the
// global window fires (passert checks the exact output inside the job) and
// the job ends DRAINED.
func TestDrainTruncatesAndEndsDrained(t *testing.T) {
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	out := beam.ParDo(s, &endlessFn{}, beam.Impulse(s))
	passert.Count(s, out, "positions", drainEnd-1)
	passert.Sum(s, out, "positions", drainEnd-1, (drainEnd-1)*drainEnd/2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Execute(ctx, p); done <- err }()

	job := waitRunning(ctx, t)
	srv := inProcessServer()
	time.Sleep(300 * time.Millisecond) // let it emit a few positions
	resp, err := srv.Drain(ctx, &jobpb.DrainJobRequest{JobId: string(job.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetState() != jobpb.JobState_DRAINING {
		t.Errorf("Drain answered state %v, want DRAINING", resp.GetState())
	}
	if err := <-done; err != nil {
		t.Fatalf("drained job: %v", err)
	}
	if st, _ := job.State(); st != jobpb.JobState_DRAINED {
		t.Fatalf("job state %v, want DRAINED (error: %v)", st, job.Err())
	}
}

// waitRunning returns the newest running job of the in-process server,
// once there is one.
func waitRunning(ctx context.Context, t *testing.T) *Job {
	t.Helper()
	for {
		var jobs []*Job
		if srv := inProcessServer(); srv != nil {
			jobs = srv.Jobs()
		}
		for i := len(jobs) - 1; i >= 0; i-- {
			if st, _ := jobs[i].State(); st == jobpb.JobState_RUNNING {
				return jobs[i]
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no job started running")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// runawayFn claims and emits positions from 1 in one bundle, for ever: it
// never checkpoints by itself. Its tracker takes only checkpoint splits
// (fraction 0), so nothing but a drain's checkpoint cuts it, and a drained
// job's output is exactly 1..runawayEnd-1.
type runawayFn struct{}

const runawayEnd = 1000

// checkpointOnly is an offset-range tracker that refuses every split but a
// checkpoint.
type checkpointOnly struct{ *offsetrange.Tracker }

func (t checkpointOnly) TrySplit(fraction float64) (primary, residual any, err error) {
	if fraction > 0 {
		return t.GetRestriction(), nil, nil
	}
	return t.Tracker.TrySplit(fraction)
}

func (*runawayFn) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 1, End: math.MaxInt64}
}

func (*runawayFn) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (*runawayFn) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 { return r.Size() }

func (*runawayFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(checkpointOnly{offsetrange.NewTracker(r)})
}

func (*runawayFn) TruncateRestriction(_ context.Context, rt *sdf.LockRTracker, _ []byte) offsetrange.Restriction {
	r := rt.GetRestriction().(offsetrange.Restriction)
	return offsetrange.Restriction{Start: r.Start, End: min(r.End, runawayEnd)}
}

func (*runawayFn) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func(int)) sdf.ProcessContinuation {
	for p := rt.GetRestriction().(offsetrange.Restriction).Start; rt.TryClaim(p); p++ {
		emit(int(p))
		time.Sleep(time.Millisecond)
	}
	return sdf.StopProcessing()
}

func init() {
	register.DoFn3x1[*sdf.LockRTracker, []byte, func(int), sdf.ProcessContinuation](&runawayFn{})
}

// TestDrainCheckpointsRunawaySDF drains a job whose SDF never returns by
// itself: the runner checkpoints the running bundle, truncates what it cut
// off, and the job ends DRAINED with exactly the truncated output.
func TestDrainCheckpointsRunawaySDF(t *testing.T) {
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	out := beam.ParDo(s, &runawayFn{}, beam.Impulse(s))
	passert.Count(s, out, "positions", runawayEnd-1)
	passert.Sum(s, out, "positions", runawayEnd-1, (runawayEnd-1)*runawayEnd/2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Execute(ctx, p); done <- err }()

	job := waitRunning(ctx, t)
	time.Sleep(200 * time.Millisecond)
	if _, err := inProcessServer().Drain(ctx, &jobpb.DrainJobRequest{JobId: string(job.ID)}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("drained job: %v", err)
	}
	if st, _ := job.State(); st != jobpb.JobState_DRAINED {
		t.Fatalf("job state %v, want DRAINED (error: %v)", st, job.Err())
	}
}
