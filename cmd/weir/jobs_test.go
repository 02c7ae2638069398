package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc"

	"github.com/weir-runner/weir/jobview"
	"github.com/weir-runner/weir/runner"
)

// startTestServer is a weir job service on a free port whose executor is
// exec; it returns the server and the --endpoint flag for it.
func startTestServer(t *testing.T, exec runner.ExecutorFunc) (*runner.Server, string) {
	t.Helper()
	s := runner.NewServer(exec, runner.ServerOptions{StagingRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	return s, "--endpoint=" + s.Endpoint()
}

// submit prepares and runs an empty pipeline named name.
func submit(t *testing.T, s *runner.Server, name string) string {
	t.Helper()
	prep, err := s.Prepare(t.Context(), &jobpb.PrepareJobRequest{Pipeline: &pipepb.Pipeline{}, JobName: name})
	if err != nil {
		t.Fatal(err)
	}
	run, err := s.Run(t.Context(), &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	return run.GetJobId()
}

func TestJobsCommand(t *testing.T) {
	s, endpoint := startTestServer(t, func(ctx context.Context, j *runner.Job) error {
		if j.Name == "broken" {
			return errors.New("stage s2: bundle failed\nTraceback (most recent call last):")
		}
		<-ctx.Done()
		return ctx.Err()
	})
	running := submit(t, s, "streaming")
	failed := submit(t, s, "broken")
	waitTerminal(t, s.Job(runner.JobID(failed)))

	var out, errOut bytes.Buffer
	if code := runMain(&out, &errOut, "jobs", endpoint); code != 0 {
		t.Fatalf("jobs: exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "JOB NAME STATE START DURATION ERROR" {
		t.Fatalf("output:\n%s", out.String())
	}
	start := s.Job(runner.JobID(running)).Submitted().UTC().Format(time.RFC3339)
	if f := strings.Fields(lines[1]); len(f) != 5 || f[0] != running || f[1] != "streaming" || f[2] != "RUNNING" || f[3] != start {
		t.Errorf("running job's row %q", lines[1])
	}
	if !strings.HasPrefix(lines[2], failed) || !strings.Contains(lines[2], "FAILED") ||
		!strings.HasSuffix(lines[2], "stage s2: bundle failed …") {
		t.Errorf("failed job's row %q, want the error's first line", lines[2])
	}
}

// beamOnly is a job service with Beam's GetJobs and nothing of weir's.
type beamOnly struct {
	jobpb.UnimplementedJobServiceServer
}

func (beamOnly) GetJobs(context.Context, *jobpb.GetJobsRequest) (*jobpb.GetJobsResponse, error) {
	return &jobpb.GetJobsResponse{JobInfo: []*jobpb.JobInfo{{JobId: "flink-1", JobName: "wc", State: jobpb.JobState_DONE}}}, nil
}

// TestJobsCommandOnBeamService: a job service that is not weir's still
// gets its jobs listed, from GetJobs, without times.
func TestJobsCommandOnBeamService(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	jobpb.RegisterJobServiceServer(g, beamOnly{})
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	var out, errOut bytes.Buffer
	if code := runMain(&out, &errOut, "jobs", "--endpoint="+lis.Addr().String()); code != 0 {
		t.Fatalf("jobs: exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[1]), " ") != "flink-1 wc DONE - -" {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestPrintJobs(t *testing.T) {
	start := time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)
	var out bytes.Buffer
	err := printJobs(&out, []jobview.Summary{
		{ID: "a-1", Name: "a", State: "DONE", Start: start, End: start.Add(1500 * time.Millisecond), Seconds: 1.5},
		{ID: "b-2", Name: "b", State: "RUNNING", Start: start, Seconds: 0.25},
		{ID: "c-3", Name: "c", State: "FAILED", Start: start, Seconds: 3725, Error: strings.Repeat("x", 100)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `JOB  NAME  STATE    START                 DURATION  ERROR
a-1  a     DONE     2026-12-02T09:30:00Z  2s        
b-2  b     RUNNING  2026-12-02T09:30:00Z  250ms     
c-3  c     FAILED   2026-12-02T09:30:00Z  1h2m5s    ` + strings.Repeat("x", 79) + "…\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestOneLine(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"short", "short"},
		{"first\nsecond", "first …"},
		{"  pad  \n", "pad"},
		{"ééééé", "ééééé"},
		{"éééééé", "éééé…"},
	} {
		if got := oneLine(tt.in, 5); got != tt.want {
			t.Errorf("oneLine(%q, 5) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
