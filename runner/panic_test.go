package runner

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestPanickingJobFailsAlone: an executor that panics for one job fails
// that job with the panic and its stack, while a job running beside it on
// the same server finishes DONE.
func TestPanickingJobFailsAlone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	release := make(chan struct{})
	ts := startServer(t, ExecutorFunc(func(ctx context.Context, j *Job) error {
		if strings.HasPrefix(j.Name, "bad") {
			panicInJob()
		}
		<-release // runs on across the other job's panic
		return nil
	}), ServerOptions{})
	good := ts.submit(t, ctx, "good")
	bad := ts.submit(t, ctx, "bad")
	if got := ts.states(t, ctx, bad); len(got) == 0 || got[len(got)-1] != jobpb.JobState_FAILED {
		t.Fatalf("panicking job's states %v, want FAILED last", got)
	}
	msgs := strings.Join(ts.messages(t, ctx, bad), "\n")
	for _, want := range []string{"panicked: job boom", "panicInJob"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("panicking job's messages lack %q:\n%s", want, msgs)
		}
	}
	close(release)
	if got := ts.states(t, ctx, good); len(got) == 0 || got[len(got)-1] != jobpb.JobState_DONE {
		t.Errorf("other job's states %v, want DONE last", got)
	}
}

func panicInJob() { panic("job boom") }

// TestHandlerPanicIsInternal: a job-service handler that panics answers
// its request with Internal, naming the method, instead of ending the
// process.
func TestHandlerPanicIsInternal(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	_, err := recoverUnary(log)(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/jobs/GetState"},
		func(context.Context, any) (any, error) { panic("unary boom") })
	checkInternal(t, err, "/jobs/GetState", "unary boom")
	err = recoverStream(log)(nil, nil, &grpc.StreamServerInfo{FullMethod: "/jobs/GetStateStream"},
		func(any, grpc.ServerStream) error { panic("stream boom") })
	checkInternal(t, err, "/jobs/GetStateStream", "stream boom")
}

func checkInternal(t *testing.T, err error, method, value string) {
	t.Helper()
	if status.Code(err) != codes.Internal {
		t.Fatalf("%s: code %v (%v), want Internal", method, status.Code(err), err)
	}
	for _, want := range []string{method, "panic: " + value} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
