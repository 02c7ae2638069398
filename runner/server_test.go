package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// testTimeout only guards against hangs; no test relies on it for timing.
const testTimeout = 2 * time.Minute

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// testServer is a Server on a free localhost port with a real gRPC client.
type testServer struct {
	s      *Server
	conn   *grpc.ClientConn
	client jobpb.JobServiceClient
}

func startServer(t *testing.T, exec Executor, opts ServerOptions) *testServer {
	t.Helper()
	if opts.StagingRoot == "" {
		opts.StagingRoot = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := NewServer(exec, opts)
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(s.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return &testServer{s: s, conn: conn, client: jobpb.NewJobServiceClient(conn)}
}

// pipelineWith returns a pipeline whose only components are environments
// with the given dependencies: enough for the job service, which never
// looks at transforms.
func pipelineWith(envs map[string][]*pipepb.ArtifactInformation) *pipepb.Pipeline {
	comps := &pipepb.Components{Environments: map[string]*pipepb.Environment{}}
	for id, deps := range envs {
		comps.Environments[id] = &pipepb.Environment{Urn: "beam:env:external:v1", Dependencies: deps}
	}
	return &pipepb.Pipeline{Components: comps}
}

// The helpers below report with t.Errorf, not t.Fatalf, because tests call
// them from several goroutines.

// submit prepares and runs a pipeline without artifacts.
func (ts *testServer) submit(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	prep, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipelineWith(nil), JobName: name})
	if err != nil {
		t.Errorf("Prepare: %v", err)
		return ""
	}
	run, err := ts.client.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Errorf("Run: %v", err)
		return ""
	}
	return run.GetJobId()
}

// states reads a job's state stream to its end.
func (ts *testServer) states(t *testing.T, ctx context.Context, id string) []jobpb.JobState_Enum {
	t.Helper()
	stream, err := ts.client.GetStateStream(ctx, &jobpb.GetJobStateRequest{JobId: id})
	if err != nil {
		t.Errorf("GetStateStream: %v", err)
		return nil
	}
	var out []jobpb.JobState_Enum
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Errorf("GetStateStream %s: %v (after %v)", id, err, out)
			return out
		}
		out = append(out, ev.GetState())
	}
}

// messages reads a job's message stream to its end, as the messages and
// states in arrival order ("ERROR: text" or "state: FAILED").
func (ts *testServer) messages(t *testing.T, ctx context.Context, id string) []string {
	t.Helper()
	stream, err := ts.client.GetMessageStream(ctx, &jobpb.JobMessagesRequest{JobId: id})
	if err != nil {
		t.Errorf("GetMessageStream: %v", err)
		return nil
	}
	var out []string
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Errorf("GetMessageStream %s: %v (after %q)", id, err, out)
			return out
		}
		if m := resp.GetMessageResponse(); m != nil {
			out = append(out, fmt.Sprintf("%v: %s", m.GetImportance(), m.GetMessageText()))
		}
		if s := resp.GetStateResponse(); s != nil {
			out = append(out, "state: "+s.GetState().String())
		}
	}
}

// waitForCompletion is the Go SDK's wait loop. That loop returns on the
// terminal state without draining its stream, so the stream's goroutine
// lives until its context ends: a context of its own keeps it from looking
// like a leak.
func waitForCompletion(ctx context.Context, client jobpb.JobServiceClient, id string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return runnerlib.WaitForCompletion(ctx, client, id)
}

func last[T any](s []T) T {
	var zero T
	if len(s) == 0 {
		return zero
	}
	return s[len(s)-1]
}

func TestRunToDone(t *testing.T) {
	ctx := testCtx(t)
	var ran atomic.Int32
	ts := startServer(t, ExecutorFunc(func(ctx context.Context, j *Job) error {
		ran.Add(1)
		if st, _ := j.State(); st != jobpb.JobState_RUNNING {
			return fmt.Errorf("executor sees state %v, want RUNNING", st)
		}
		return nil
	}), ServerOptions{})

	p := pipelineWith(map[string][]*pipepb.ArtifactInformation{"go": nil})
	prep, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: p, JobName: "word count/1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := prep.GetArtifactStagingEndpoint().GetUrl(); got != ts.s.Endpoint() {
		t.Errorf("staging endpoint %q, want the server's %q", got, ts.s.Endpoint())
	}
	if prep.GetStagingSessionToken() == "" {
		t.Error("no staging token")
	}
	run, err := ts.client.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	id := run.GetJobId()
	if strings.ContainsAny(id, " /") || !strings.HasPrefix(id, "word-count-1") {
		t.Errorf("job id %q: want a safe id derived from the name", id)
	}

	states := ts.states(t, ctx, id)
	if last(states) != jobpb.JobState_DONE {
		t.Fatalf("states %v, want to end in DONE", states)
	}
	// The stream starts with the current state, so it may skip early ones,
	// but must never go backwards.
	order := []jobpb.JobState_Enum{jobpb.JobState_STARTING, jobpb.JobState_RUNNING, jobpb.JobState_DONE}
	for i := 1; i < len(states); i++ {
		if slices.Index(order, states[i]) <= slices.Index(order, states[i-1]) {
			t.Errorf("states %v out of order", states)
		}
	}
	if ran.Load() != 1 {
		t.Errorf("executor ran %d times, want 1", ran.Load())
	}

	st, err := ts.client.GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
	if err != nil || st.GetState() != jobpb.JobState_DONE || st.GetTimestamp() == nil {
		t.Errorf("GetState = %v, %v; want DONE with a timestamp", st, err)
	}
	pl, err := ts.client.GetPipeline(ctx, &jobpb.GetJobPipelineRequest{JobId: id})
	if err != nil || !proto.Equal(pl.GetPipeline(), p) {
		t.Errorf("GetPipeline = %v, %v; want the submitted pipeline", pl, err)
	}
	jobs, err := ts.client.GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil || len(jobs.GetJobInfo()) != 1 {
		t.Fatalf("GetJobs = %v, %v; want one job", jobs, err)
	}
	if info := jobs.GetJobInfo()[0]; info.GetJobId() != id || info.GetJobName() != "word count/1" || info.GetState() != jobpb.JobState_DONE {
		t.Errorf("GetJobs info = %v", info)
	}
	if m, err := ts.client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id}); err != nil || m.GetMetrics() == nil {
		t.Errorf("GetJobMetrics = %v, %v; want metrics", m, err)
	}
	if _, err := ts.client.DescribePipelineOptions(ctx, &jobpb.DescribePipelineOptionsRequest{}); err != nil {
		t.Errorf("DescribePipelineOptions: %v", err)
	}
	// The Go SDK's own wait loop sees the job finish.
	if err := waitForCompletion(ctx, ts.client, id); err != nil {
		t.Errorf("WaitForCompletion: %v", err)
	}
}

func TestFailedJobReportsError(t *testing.T) {
	ctx := testCtx(t)
	ts := startServer(t, ExecutorFunc(func(ctx context.Context, j *Job) error {
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_BASIC, "about to fail")
		return errors.New("disk on fire")
	}), ServerOptions{})
	id := ts.submit(t, ctx, "failing")

	msgs := ts.messages(t, ctx, id)
	if last(msgs) != "state: FAILED" {
		t.Fatalf("messages %q, want to end in FAILED", msgs)
	}
	errAt := slices.IndexFunc(msgs, func(m string) bool {
		return strings.HasPrefix(m, "JOB_MESSAGE_ERROR:") && strings.Contains(m, "disk on fire") && strings.Contains(m, id)
	})
	if errAt < 0 || errAt > slices.Index(msgs, "state: FAILED") {
		t.Errorf("messages %q: want the error, naming the job, before FAILED", msgs)
	}
	if !slices.Contains(msgs, "JOB_MESSAGE_BASIC: about to fail") {
		t.Errorf("messages %q: missing the executor's message", msgs)
	}
	err := waitForCompletion(ctx, ts.client, id)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("WaitForCompletion = %v, want the job's error", err)
	}
	if got := ts.s.Job(JobID(id)).Err(); got == nil || !strings.Contains(got.Error(), "disk on fire") {
		t.Errorf("Job.Err = %v", got)
	}
}

func TestExecutorPanicFailsOnlyItsJob(t *testing.T) {
	ctx := testCtx(t)
	ts := startServer(t, ExecutorFunc(func(ctx context.Context, j *Job) error {
		if j.Name == "bad" {
			var m map[string]int
			m["x"]++ // nil map write
		}
		return nil
	}), ServerOptions{})
	bad := ts.submit(t, ctx, "bad")
	if got := last(ts.states(t, ctx, bad)); got != jobpb.JobState_FAILED {
		t.Fatalf("panicking job ended %v, want FAILED", got)
	}
	if err := ts.s.Job(JobID(bad)).Err(); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("Err = %v, want the panic", err)
	}
	good := ts.submit(t, ctx, "good")
	if got := last(ts.states(t, ctx, good)); got != jobpb.JobState_DONE {
		t.Errorf("next job ended %v, want DONE", got)
	}
}

// blockingExecutor runs until its job is cancelled, announcing each start.
func blockingExecutor(started chan<- JobID) Executor {
	return ExecutorFunc(func(ctx context.Context, j *Job) error {
		started <- j.ID
		<-ctx.Done()
		return ctx.Err()
	})
}

func TestCancelEndsJobWithoutLeaks(t *testing.T) {
	ctx := testCtx(t)
	started := make(chan JobID, 1)
	ts := startServer(t, blockingExecutor(started), ServerOptions{})
	// Warm the connection up so its goroutines are in the baseline.
	if _, err := ts.client.GetJobs(ctx, &jobpb.GetJobsRequest{}); err != nil {
		t.Fatal(err)
	}
	baseline := runtime.NumGoroutine()

	id := ts.submit(t, ctx, "blocking")
	<-started
	// Streams opened while the job runs must end when it does.
	var wg sync.WaitGroup
	var streamStates []jobpb.JobState_Enum
	var streamMsgs []string
	wg.Add(2)
	go func() { defer wg.Done(); streamStates = ts.states(t, ctx, id) }()
	go func() { defer wg.Done(); streamMsgs = ts.messages(t, ctx, id) }()

	resp, err := ts.client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	if st := resp.GetState(); st != jobpb.JobState_CANCELLING && st != jobpb.JobState_CANCELLED {
		t.Errorf("Cancel returned state %v, want CANCELLING or CANCELLED", st)
	}
	wg.Wait()
	if last(streamStates) != jobpb.JobState_CANCELLED {
		t.Errorf("state stream %v, want to end in CANCELLED", streamStates)
	}
	if last(streamMsgs) != "state: CANCELLED" {
		t.Errorf("message stream %q, want to end in CANCELLED", streamMsgs)
	}
	// Cancelling a finished job is harmless and reports its state.
	resp, err = ts.client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: id})
	if err != nil || resp.GetState() != jobpb.JobState_CANCELLED {
		t.Errorf("second Cancel = %v, %v; want CANCELLED", resp, err)
	}
	if err := waitForCompletion(ctx, ts.client, id); err != nil {
		t.Errorf("WaitForCompletion of a cancelled job: %v", err)
	}
	waitForGoroutines(t, ctx, baseline)
}

// waitForGoroutines waits until no more than want goroutines run; gRPC ends
// its stream goroutines shortly after the streams, so it retries.
func waitForGoroutines(t *testing.T, ctx context.Context, want int) {
	t.Helper()
	for runtime.NumGoroutine() > want {
		select {
		case <-ctx.Done():
			pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
			t.Fatalf("%d goroutines, want at most %d", runtime.NumGoroutine(), want)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestCancelBeforeRunning(t *testing.T) {
	// A job cancelled while STARTING must still end CANCELLED, not FAILED.
	ctx := testCtx(t)
	release := make(chan struct{})
	s := NewServer(ExecutorFunc(func(ctx context.Context, j *Job) error {
		<-release
		return ctx.Err()
	}), ServerOptions{StagingRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { s.Stop(context.Background()) })
	prep, err := s.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipelineWith(nil)})
	if err != nil {
		t.Fatal(err)
	}
	run, err := s.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, &jobpb.CancelJobRequest{JobId: run.GetJobId()}); err != nil {
		t.Fatal(err)
	}
	close(release)
	j := s.Job(JobID(run.GetJobId()))
	for {
		_, st, changed := j.Updates(0)
		if IsTerminal(st) {
			if st != jobpb.JobState_CANCELLED {
				t.Errorf("state %v, want CANCELLED", st)
			}
			return
		}
		if err := waitChange(ctx, changed); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBadRequests(t *testing.T) {
	ctx := testCtx(t)
	ts := startServer(t, ExecutorFunc(func(context.Context, *Job) error { return nil }), ServerOptions{})
	c := ts.client
	done := ts.submit(t, ctx, "done")
	depPipeline := pipelineWith(map[string][]*pipepb.ArtifactInformation{"go": {fileArtifact(t, "/tmp/x", "")}})
	unstaged, err := c.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: depPipeline})
	if err != nil {
		t.Fatal(err)
	}

	streamErr := func(recv func() error) error {
		err := recv()
		if err == nil {
			return errors.New("stream did not fail")
		}
		return err
	}
	tests := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"Prepare nil pipeline", func() error { _, err := c.Prepare(ctx, &jobpb.PrepareJobRequest{JobName: "x"}); return err }, codes.InvalidArgument},
		{"Run empty id", func() error { _, err := c.Run(ctx, &jobpb.RunJobRequest{}); return err }, codes.InvalidArgument},
		{"Run unknown", func() error { _, err := c.Run(ctx, &jobpb.RunJobRequest{PreparationId: "nope-1"}); return err }, codes.NotFound},
		{"Run twice", func() error { _, err := c.Run(ctx, &jobpb.RunJobRequest{PreparationId: done}); return err }, codes.AlreadyExists},
		{"Run unstaged", func() error {
			_, err := c.Run(ctx, &jobpb.RunJobRequest{PreparationId: unstaged.GetPreparationId()})
			return err
		}, codes.FailedPrecondition},
		{"GetState empty id", func() error { _, err := c.GetState(ctx, &jobpb.GetJobStateRequest{}); return err }, codes.InvalidArgument},
		{"GetState unknown", func() error { _, err := c.GetState(ctx, &jobpb.GetJobStateRequest{JobId: "nope"}); return err }, codes.NotFound},
		{"GetPipeline unknown", func() error { _, err := c.GetPipeline(ctx, &jobpb.GetJobPipelineRequest{JobId: "nope"}); return err }, codes.NotFound},
		{"Cancel empty id", func() error { _, err := c.Cancel(ctx, &jobpb.CancelJobRequest{}); return err }, codes.InvalidArgument},
		{"Cancel unknown", func() error { _, err := c.Cancel(ctx, &jobpb.CancelJobRequest{JobId: "nope"}); return err }, codes.NotFound},
		{"GetJobMetrics unknown", func() error { _, err := c.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: "nope"}); return err }, codes.NotFound},
		{"Drain empty id", func() error { _, err := c.Drain(ctx, &jobpb.DrainJobRequest{}); return err }, codes.InvalidArgument},
		{"Drain unknown", func() error { _, err := c.Drain(ctx, &jobpb.DrainJobRequest{JobId: "nope"}); return err }, codes.NotFound},
		{"GetStateStream unknown", func() error {
			s, err := c.GetStateStream(ctx, &jobpb.GetJobStateRequest{JobId: "nope"})
			if err != nil {
				return err
			}
			return streamErr(func() error { _, err := s.Recv(); return err })
		}, codes.NotFound},
		{"GetMessageStream empty id", func() error {
			s, err := c.GetMessageStream(ctx, &jobpb.JobMessagesRequest{})
			if err != nil {
				return err
			}
			return streamErr(func() error { _, err := s.Recv(); return err })
		}, codes.InvalidArgument},
		{"staging unknown token", func() error {
			s, err := jobpb.NewArtifactStagingServiceClient(ts.conn).ReverseArtifactRetrievalService(ctx)
			if err != nil {
				return err
			}
			if err := s.Send(&jobpb.ArtifactResponseWrapper{StagingToken: "nope"}); err != nil {
				return err
			}
			return streamErr(func() error { _, err := s.Recv(); return err })
		}, codes.NotFound},
		{"staging no token", func() error {
			s, err := jobpb.NewArtifactStagingServiceClient(ts.conn).ReverseArtifactRetrievalService(ctx)
			if err != nil {
				return err
			}
			if err := s.Send(&jobpb.ArtifactResponseWrapper{}); err != nil {
				return err
			}
			return streamErr(func() error { _, err := s.Recv(); return err })
		}, codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if got := status.Code(err); got != tt.want {
				t.Fatalf("code %v (%v), want %v", got, err, tt.want)
			}
			if msg := status.Convert(err).Message(); !strings.HasPrefix(msg, "weir: ") {
				t.Errorf("message %q does not say where it comes from", msg)
			}
		})
	}
}

func TestConcurrentJobs(t *testing.T) {
	// Every executor waits for all of them to be running, so the test only
	// finishes if the server runs the jobs at the same time.
	const n = 8
	ctx := testCtx(t)
	var arrived atomic.Int32
	allIn := make(chan struct{})
	ts := startServer(t, ExecutorFunc(func(ctx context.Context, j *Job) error {
		if arrived.Add(1) == n {
			close(allIn)
		}
		select {
		case <-allIn:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}), ServerOptions{})

	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ids[i] = ts.submit(t, ctx, "same-name")
			if got := last(ts.states(t, ctx, ids[i])); got != jobpb.JobState_DONE {
				t.Errorf("job %s ended %v, want DONE", ids[i], got)
			}
		})
	}
	wg.Wait()
	slices.Sort(ids)
	if len(slices.Compact(ids)) != n {
		t.Errorf("job ids %v are not unique", ids)
	}
}

func TestStopCancelsRunningJobs(t *testing.T) {
	ctx := testCtx(t)
	started := make(chan JobID, 2)
	// No StagingRoot: the server makes a temporary one and must remove it.
	s := NewServer(blockingExecutor(started), ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	root, err := s.stagingRoot()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 2 {
		prep, err := s.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipelineWith(nil)})
		if err != nil {
			t.Fatal(err)
		}
		run, err := s.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.GetJobId())
		<-started
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, id := range ids {
		if st, _ := s.Job(JobID(id)).State(); st != jobpb.JobState_CANCELLED {
			t.Errorf("job %s is %v after Stop, want CANCELLED", id, st)
		}
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staging root %s still there after Stop (%v)", root, err)
	}
	if _, err := s.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipelineWith(nil)}); status.Code(err) != codes.Unavailable {
		t.Errorf("Prepare after Stop: %v, want Unavailable", err)
	}
	if err := s.Start("127.0.0.1:0"); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Start after Stop: %v, want ErrServerClosed", err)
	}
}

func TestStopIsBoundedByContext(t *testing.T) {
	// An executor that ignores cancellation must not hold Stop forever.
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	s := NewServer(ExecutorFunc(func(ctx context.Context, j *Job) error {
		close(started)
		<-release
		return nil
	}), ServerOptions{StagingRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	ctx := testCtx(t)
	prep, err := s.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipelineWith(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()}); err != nil {
		t.Fatal(err)
	}
	<-started
	stopCtx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Stop(stopCtx); !errors.Is(err, context.Canceled) {
		t.Errorf("Stop = %v, want the context's error", err)
	}
}

func TestPreparationsExpire(t *testing.T) {
	ctx := testCtx(t)
	s := NewServer(ExecutorFunc(func(context.Context, *Job) error { return nil }),
		ServerOptions{StagingRoot: t.TempDir(), PreparationTTL: time.Nanosecond, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { s.Stop(context.Background()) })
	old, err := s.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipelineWith(nil)})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond) // let the nanosecond TTL pass
	if _, err := s.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipelineWith(nil)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(ctx, &jobpb.RunJobRequest{PreparationId: old.GetPreparationId()}); status.Code(err) != codes.NotFound {
		t.Errorf("Run of an expired preparation: %v, want NotFound", err)
	}
}

func TestIDPrefix(t *testing.T) {
	for name, want := range map[string]string{
		"":                       "job",
		"wordcount":              "wordcount",
		"go-job-1-1700000000":    "go-job-1-1700000000",
		"../../etc":              "etc",
		"a b/c":                  "a-b-c",
		"日本":                     "job",
		strings.Repeat("x", 100): strings.Repeat("x", 48),
	} {
		if got := idPrefix(name); got != want {
			t.Errorf("idPrefix(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestNextSkipFollowsMessageIDs(t *testing.T) {
	msg := func(id string) *jobpb.JobMessage { return &jobpb.JobMessage{MessageId: id} }
	if got := nextSkip(0, nil); got != 0 {
		t.Errorf("no messages: %d", got)
	}
	// The job dropped its first 5 messages: the next call must skip all 12.
	if got := nextSkip(0, []*jobpb.JobMessage{msg("6"), msg("12")}); got != 12 {
		t.Errorf("after ids 6..12: %d, want 12", got)
	}
	if got := nextSkip(3, []*jobpb.JobMessage{msg("x"), msg("y")}); got != 5 {
		t.Errorf("unparsable ids: %d, want 5", got)
	}
}
