package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestServeResumesUnfinishedJobs: a job the server was running when it
// stopped is started again by the next server on the same state dir, with
// its pipeline, options and staged files, under its name (so it restores
// from its checkpoints); a job its user cancelled, one that takes no
// checkpoints and one whose workers live in its submitter are not.
func TestServeResumesUnfinishedJobs(t *testing.T) {
	ctx := testCtx(t)
	stateDir := t.TempDir()
	started := make(chan *Job, 10)
	exec := ExecutorFunc(func(ctx context.Context, j *Job) error {
		started <- j
		<-ctx.Done()
		return ctx.Err()
	})
	worker := writeFile(t, t.TempDir(), "worker", []byte("\x7fELF the worker binary"))
	opts := func(interval string) *structpb.Struct {
		o, _ := structpb.NewStruct(map[string]any{"beam:option:" + CheckpointIntervalOption + ":v1": interval})
		return o
	}
	submit := func(client jobpb.JobServiceClient, name, envURN string, o *structpb.Struct) string {
		p := &pipepb.Pipeline{Components: &pipepb.Components{Environments: map[string]*pipepb.Environment{
			"go": {Urn: envURN, Dependencies: []*pipepb.ArtifactInformation{fileArtifact(t, worker, "")}}}}}
		prep, err := client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: p, PipelineOptions: o, JobName: name})
		if err != nil {
			t.Fatal(err)
		}
		token, err := runnerlib.Stage(ctx, prep.GetPreparationId(), prep.GetArtifactStagingEndpoint().GetUrl(), "", prep.GetStagingSessionToken())
		if err != nil {
			t.Fatal(err)
		}
		id, err := runnerlib.Submit(ctx, client, prep.GetPreparationId(), token)
		if err != nil {
			t.Fatal(err)
		}
		<-started
		return id
	}

	// startServer's cleanup stops each server again, which is harmless.
	ts := startServer(t, exec, ServerOptions{StateDir: stateDir})
	a, client := ts.s, ts.client
	submit(client, "resumable", graphx.URNEnvProcess, opts("10s"))
	cancelled := submit(client, "cancelled", graphx.URNEnvProcess, opts("10s"))
	unchecked := submit(client, "unchecked", graphx.URNEnvProcess, &structpb.Struct{})
	loop := submit(client, "loopback", graphx.URNEnvExternal, opts("10s"))
	if _, err := client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: cancelled}); err != nil {
		t.Fatal(err)
	}
	waitForCompletion(ctx, client, cancelled) // CANCELLED, which it reports as no error
	if !hasMessage(a.Job(JobID(loop)), "will not resume this job if it restarts: the workers of environment go run in its submitter") {
		t.Errorf("the LOOPBACK job was not told it will not be resumed")
	}
	if !hasMessage(a.Job(JobID(unchecked)), "will not resume this job if it restarts: it takes no checkpoints") {
		t.Errorf("the job without checkpoints was not told it will not be resumed")
	}
	want := a.Jobs()[0]
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	b := startServer(t, exec, ServerOptions{StateDir: stateDir}).s
	ids, err := b.ResumeJobs()
	if err != nil || len(ids) != 1 {
		t.Fatalf("ResumeJobs = %v, %v; want the one resumable job", ids, err)
	}
	got := <-started
	if got.Name != "resumable" || !proto.Equal(got.Pipeline, want.Pipeline) || !proto.Equal(got.Options, want.Options) {
		t.Errorf("resumed %s (%v, %v), want the job as submitted", got.Name, got.Pipeline, got.Options)
	}
	if !hasMessage(got, "resumed after weir serve restarted") {
		t.Errorf("the resumed job does not say it was resumed")
	}
	// Its worker binary is served from the record.
	rel, err := (&ArtifactRetrieval{job: got}).stagedPath(mustFilePath(t, got.Artifacts["go"][0]))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(got.StagingDir, rel)); err != nil || string(b) != "\x7fELF the worker binary" {
		t.Errorf("the resumed job's worker binary reads %q, %v", b, err)
	}
	// Its user cancels it: nothing is left to resume.
	if _, err := b.Cancel(ctx, &jobpb.CancelJobRequest{JobId: string(ids[0])}); err != nil {
		t.Fatal(err)
	}
	for {
		_, st, changed := got.Updates(0)
		if IsTerminal(st) {
			break
		}
		if err := waitChange(ctx, changed); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, exec, ServerOptions{StateDir: stateDir}).s
	if ids, err := c.ResumeJobs(); err != nil || len(ids) != 0 {
		t.Errorf("after its user cancelled the resumed job, ResumeJobs = %v, %v; want none", ids, err)
	}
}

func mustFilePath(t *testing.T, a *pipepb.ArtifactInformation) string {
	t.Helper()
	var fp pipepb.ArtifactFilePayload
	if err := proto.Unmarshal(a.GetTypePayload(), &fp); err != nil {
		t.Fatal(err)
	}
	return fp.GetPath()
}
