package runner

import (
	"context"
	"log/slog"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// FuzzJobService sends the job service a PrepareJobRequest of any bytes
// (pipeline, options, name), runs what it prepared, and asks after a job
// by an id of any bytes and by the prepared one: GetState, GetPipeline,
// GetJobMetrics, Cancel, Drain, a savepoint. Every call answers or fails
// with a gRPC status the client can read (not Unknown, not Internal: no
// panic reached the interceptor), and never panics.
func FuzzJobService(f *testing.F) {
	s := NewServer(ExecutorFunc(func(ctx context.Context, j *Job) error { return nil }),
		ServerOptions{StagingRoot: f.TempDir(), StateDir: f.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	f.Cleanup(func() { _ = s.Stop(context.Background()) })
	opts, err := structpb.NewStruct(map[string]any{"beam:option:job_name:v1": "fuzzed",
		"beam:option:weir_checkpoint_interval:v1": "10s", "beam:option:go_options:v1": map[string]any{"options": map[string]any{"weir_checkpoint_keep": "2"}}})
	if err != nil {
		f.Fatal(err)
	}
	deps := pipelineWith(map[string][]*pipepb.ArtifactInformation{"go": {{TypeUrn: "beam:artifact:type:file:v1", RoleUrn: "beam:artifact:role:staging_to:v1"}}})
	for _, req := range []*jobpb.PrepareJobRequest{
		{Pipeline: pipelineWith(nil), JobName: "job"},
		{Pipeline: pipelineWith(nil), JobName: "a job/1", PipelineOptions: opts},
		{Pipeline: deps, JobName: "staged"},
	} {
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "fuzzed-1")
	}
	f.Fuzz(func(t *testing.T, b []byte, id string) {
		ctx := context.Background()
		var req jobpb.PrepareJobRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			return
		}
		ids := []string{id}
		prep, err := s.Prepare(ctx, &req)
		check(t, "Prepare", err)
		if err == nil {
			run, err := s.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
			check(t, "Run", err)
			ids = append(ids, prep.GetPreparationId(), run.GetJobId())
		}
		for _, id := range ids {
			_, err := s.GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
			check(t, "GetState", err)
			_, err = s.GetPipeline(ctx, &jobpb.GetJobPipelineRequest{JobId: id})
			check(t, "GetPipeline", err)
			_, err = s.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id})
			check(t, "GetJobMetrics", err)
			_, err = s.takeSavepoint(ctx, &structpb.Struct{Fields: map[string]*structpb.Value{"job_id": structpb.NewStringValue(id)}})
			check(t, "Savepoint", err)
			_, err = s.Drain(ctx, &jobpb.DrainJobRequest{JobId: id})
			check(t, "Drain", err)
			_, err = s.Cancel(ctx, &jobpb.CancelJobRequest{JobId: id})
			check(t, "Cancel", err)
		}
	})
}

func check(t *testing.T, method string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	st, ok := status.FromError(err)
	if !ok || st.Code() == codes.Unknown || st.Code() == codes.Internal {
		t.Fatalf("%s: %v is not a status a client can act on", method, err)
	}
}
