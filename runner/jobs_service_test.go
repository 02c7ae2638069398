package runner

import (
	"context"
	"errors"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
)

// TestListJobs: weir.v1.Jobs/List gives each job's state, start, end and
// error, as the job itself says them.
func TestListJobs(t *testing.T) {
	ctx := testCtx(t)
	ts := startServer(t, ExecutorFunc(func(ctx context.Context, j *Job) error {
		switch j.Name {
		case "block":
			<-ctx.Done()
			return ctx.Err()
		case "fail":
			return errors.New("disk full\nand more")
		}
		return nil
	}), ServerOptions{})
	running := ts.submit(t, ctx, "block")
	failed := ts.submit(t, ctx, "fail")
	if err := waitForCompletion(ctx, ts.client, failed); err == nil {
		t.Fatal("the failing job succeeded")
	}
	sums, err := ListJobs(ctx, ts.conn)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 2 || sums[0].ID != running || sums[1].ID != failed {
		t.Fatalf("jobs %+v, want %s then %s", sums, running, failed)
	}
	r, f := sums[0], sums[1]
	rj, fj := ts.s.Job(JobID(running)), ts.s.Job(JobID(failed))
	if r.Name != "block" || r.State != jobpb.JobState_RUNNING.String() || !r.Start.Equal(rj.Submitted()) ||
		!r.End.IsZero() || r.Error != "" || r.Seconds < 0 {
		t.Errorf("running job %+v", r)
	}
	if f.State != jobpb.JobState_FAILED.String() || !f.Start.Equal(fj.Submitted()) || !f.End.Equal(fj.Ended()) ||
		f.Error != fj.Err().Error() || f.Seconds != fj.Ended().Sub(fj.Submitted()).Seconds() {
		t.Errorf("failed job %+v", f)
	}
}
