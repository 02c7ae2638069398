package runner

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fakeClock is a settable clock, safe for concurrent use.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time  { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) set(t time.Time) { c.ns.Store(t.UnixNano()) }

// retentionServer runs jobs named "block" until cancelled and ends the
// others at once, pruning by clock with the given retention.
func retentionServer(t *testing.T, keep time.Duration, clock *fakeClock) *testServer {
	t.Helper()
	exec := ExecutorFunc(func(ctx context.Context, j *Job) error {
		if j.Name == "block" {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	ts := startServer(t, exec, ServerOptions{JobRetention: keep})
	ts.s.now = clock.now
	return ts
}

// endedJob submits a job that ends at once and waits for its end.
func (ts *testServer) endedJob(t *testing.T, ctx context.Context, name string) *Job {
	t.Helper()
	id := ts.submit(t, ctx, name)
	if err := waitForCompletion(ctx, ts.client, id); err != nil {
		t.Fatal(err)
	}
	j := ts.s.Job(JobID(id))
	if j == nil || j.Ended().IsZero() {
		t.Fatalf("job %s: not ended or not kept", id)
	}
	return j
}

func listed(t *testing.T, ctx context.Context, ts *testServer, id JobID) bool {
	t.Helper()
	resp, err := ts.client.GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range resp.GetJobInfo() {
		if info.GetJobId() == string(id) {
			return true
		}
	}
	return false
}

// TestJobRetention: an ended job stays while it has been terminal for no
// longer than the retention, then GetJobs, GetState and Cancel no longer
// know it; a running job stays however old; zero retention keeps all.
func TestJobRetention(t *testing.T) {
	ctx := testCtx(t)
	tests := []struct {
		name  string
		keep  time.Duration
		after time.Duration // how long after the job's end the clock reads
		kept  bool
	}{
		{"within", time.Hour, time.Hour, true},
		{"past", time.Hour, time.Hour + time.Nanosecond, false},
		{"forever", 0, 1000 * time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var clock fakeClock
			ts := retentionServer(t, tt.keep, &clock)
			clock.set(time.Now())
			running := ts.submit(t, ctx, "block")
			j := ts.endedJob(t, ctx, "quick")
			if !j.Submitted().Before(j.Ended()) && !j.Submitted().Equal(j.Ended()) {
				t.Errorf("submitted %v after ended %v", j.Submitted(), j.Ended())
			}
			clock.set(j.Ended().Add(tt.after))

			if got := listed(t, ctx, ts, j.ID); got != tt.kept {
				t.Errorf("GetJobs lists the ended job: %v, want %v", got, tt.kept)
			}
			_, err := ts.client.GetState(ctx, &jobpb.GetJobStateRequest{JobId: string(j.ID)})
			if tt.kept && err != nil {
				t.Errorf("GetState of a kept job: %v", err)
			}
			if !tt.kept && status.Code(err) != codes.NotFound {
				t.Errorf("GetState of a pruned job: %v, want NotFound", err)
			}
			if _, err := ts.client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: string(j.ID)}); !tt.kept && status.Code(err) != codes.NotFound {
				t.Errorf("Cancel of a pruned job: %v, want NotFound", err)
			}
			if !listed(t, ctx, ts, JobID(running)) || ts.s.Job(JobID(running)).Ended() != (time.Time{}) {
				t.Errorf("the running job %s was pruned or has an end", running)
			}
		})
	}
}

// TestPrunedJobStreamEndsCleanly: a stream following a job ends with its
// terminal state and EOF even when the job is pruned as it ends.
func TestPrunedJobStreamEndsCleanly(t *testing.T) {
	ctx := testCtx(t)
	var clock fakeClock
	ts := retentionServer(t, time.Minute, &clock)
	clock.set(time.Now().Add(time.Hour)) // every ended job has expired
	id := ts.submit(t, ctx, "block")
	stream, err := ts.client.GetMessageStream(ctx, &jobpb.JobMessagesRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	// The first state event says the stream has started following.
	for {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetStateResponse() != nil {
			break
		}
	}
	j := ts.s.Job(JobID(id))
	if _, err := ts.client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: id}); err != nil {
		t.Fatal(err)
	}
	// Prune as soon as the job ends, racing the stream.
	for j.Ended().IsZero() {
		_, _, changed := j.Updates(0)
		if j.Ended().IsZero() {
			<-changed
		}
	}
	if listed(t, ctx, ts, JobID(id)) {
		t.Fatal("the cancelled job was not pruned")
	}
	var last jobpb.JobState_Enum
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stream of a pruned job: %v", err)
		}
		if st := resp.GetStateResponse(); st != nil {
			last = st.GetState()
		}
	}
	if last != jobpb.JobState_CANCELLED {
		t.Errorf("the stream's last state %v, want CANCELLED", last)
	}
}
