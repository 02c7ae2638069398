package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/joboptions"
)

// TestJobName: the job_name option names a job, then the request's name,
// except Python's constant "job"; a job with neither gets a name of its
// own that no other job has.
func TestJobName(t *testing.T) {
	now := time.Date(2026, 12, 1, 19, 35, 1, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		requested string
		option    string
		want      string // a prefix when it ends in "-"
	}{
		{"option", "job", "clicks", "clicks"},
		{"option over request", "go-job-1-17", "clicks", "clicks"},
		{"request (Go)", "go-job-1-17", "", "go-job-1-17"},
		{"python's placeholder", "job", "", "job-20261201-193501-"},
		{"none", "", "", "job-20261201-193501-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := jobName(tc.requested, &joboptions.Options{JobName: tc.option}, now)
			if strings.HasSuffix(tc.want, "-") {
				if !strings.HasPrefix(got, tc.want) || len(got) != len(tc.want)+6 {
					t.Errorf("name %q, want %q and 6 random characters", got, tc.want)
				}
				if other := jobName(tc.requested, &joboptions.Options{}, now); other == got {
					t.Errorf("two unnamed jobs are both %q", got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("name %q, want %q", got, tc.want)
			}
		})
	}
}

// Python's Prepare names every job "job" and puts --job_name among the
// options: the job is named by the option, and its id follows.
func TestPrepareNamesJobFromOption(t *testing.T) {
	ctx := testCtx(t)
	ts := startServer(t, ExecutorFunc(func(context.Context, *Job) error { return nil }), ServerOptions{})
	opts, _ := structpb.NewStruct(map[string]any{"beam:option:job_name:v1": "clicks", "beam:option:weir_combine_lifting:v1": false})
	prep, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipelineWith(nil), JobName: "job", PipelineOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	if id := prep.GetPreparationId(); !strings.HasPrefix(id, "clicks-") {
		t.Errorf("preparation id %q, want clicks-N", id)
	}
	run, err := ts.client.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	j := ts.s.Job(JobID(run.GetJobId()))
	o, err := j.JobOptions()
	if err != nil || j.Name != "clicks" || o.CombineLifting || !o.IsSet(joboptions.CombineLifting) {
		t.Errorf("job %q, options %+v, %v; want clicks without combine lifting", j.Name, o, err)
	}
}

// A bad option fails the submission at Prepare, naming the option and
// value, before anything is staged.
func TestPrepareRefusesBadOptions(t *testing.T) {
	ctx := testCtx(t)
	ts := startServer(t, ExecutorFunc(func(context.Context, *Job) error { return nil }), ServerOptions{})
	for opt, want := range map[string]string{
		"beam:option:weir_checkpoint_interval:v1": `option --weir_checkpoint_interval="often": want a duration`,
		"beam:option:weir_chekpoint_interval:v1":  `option --weir_chekpoint_interval: weir has no such job option`,
	} {
		opts, _ := structpb.NewStruct(map[string]any{opt: "often"})
		_, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipelineWith(nil), JobName: "x", PipelineOptions: opts})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want InvalidArgument with %q", opt, err, want)
		}
	}
}

// DescribePipelineOptions publishes the declaration.
func TestDescribePipelineOptions(t *testing.T) {
	ctx := testCtx(t)
	ts := startServer(t, ExecutorFunc(func(context.Context, *Job) error { return nil }), ServerOptions{})
	resp, err := ts.client.DescribePipelineOptions(ctx, &jobpb.DescribePipelineOptionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]jobpb.PipelineOptionType_Enum{}
	for _, o := range resp.GetOptions() {
		got[o.GetName()] = o.GetType()
	}
	for _, d := range joboptions.All() {
		if _, ok := got[d.Name]; !ok {
			t.Errorf("%s is not described", d.Name)
		}
	}
	if got[CombineLiftingOption] != jobpb.PipelineOptionType_STRING || got[MaxBundleElementsOption] != jobpb.PipelineOptionType_INTEGER {
		t.Errorf("types: lifting %v, bundle elements %v; want STRING (see joboptions.Describe), INTEGER",
			got[CombineLiftingOption], got[MaxBundleElementsOption])
	}
}

// Streams on a preparation that has not run answer NotFound at once, so
// Python subscribes again with the job id after Run, without its
// Prepare-time deadline (see Server.lookup).
func TestStreamsOnPreparationID(t *testing.T) {
	ctx := testCtx(t)
	ts := startServer(t, ExecutorFunc(func(context.Context, *Job) error { return nil }), ServerOptions{})
	prep, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipelineWith(nil), JobName: "p"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ts.client.GetStateStream(ctx, &jobpb.GetJobStateRequest{JobId: prep.GetPreparationId()})
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "preparation") {
		t.Errorf("GetStateStream on a preparation: %v, want NotFound saying it is a preparation", err)
	}
	run, err := ts.client.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	if states := ts.states(t, ctx, run.GetJobId()); last(states) != jobpb.JobState_DONE {
		t.Errorf("states %v after Run, want DONE last", states)
	}
}
