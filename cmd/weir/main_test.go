package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/runner"
)

func TestClientCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s := runner.NewServer(runner.ExecutorFunc(func(ctx context.Context, j *runner.Job) error {
		<-ctx.Done()
		return ctx.Err()
	}), runner.ServerOptions{StagingRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	prep, err := s.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: &pipepb.Pipeline{}, JobName: "blocking"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := s.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	id := run.GetJobId()
	endpoint := "--endpoint=" + s.Endpoint()

	var out, errOut bytes.Buffer
	if code := runMain(&out, &errOut, "jobs", endpoint); code != 0 {
		t.Fatalf("jobs: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), id) || !strings.Contains(out.String(), "blocking") {
		t.Errorf("jobs output %q does not list job %s", out.String(), id)
	}

	// The job takes no checkpoints: a savepoint is refused, saying why.
	errOut.Reset()
	if code := runMain(io.Discard, &errOut, "savepoint", endpoint, id); code != 1 ||
		!strings.Contains(errOut.String(), "FailedPrecondition") || !strings.Contains(errOut.String(), "takes no checkpoints") {
		t.Errorf("savepoint of a job without checkpoints: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := runMain(io.Discard, &errOut, "savepoint", endpoint, "no-such-job"); code != 1 || !strings.Contains(errOut.String(), "NotFound") {
		t.Errorf("savepoint of an unknown job: exit %d, %q", code, errOut.String())
	}

	out.Reset()
	if code := runMain(&out, &errOut, "cancel", endpoint, id); code != 0 {
		t.Fatalf("cancel: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "CANCEL") {
		t.Errorf("cancel output %q, want the job's state", out.String())
	}

	out.Reset()
	if code := runMain(&out, &errOut, "drain", endpoint, id); code != 0 {
		t.Fatalf("drain: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), id) {
		t.Errorf("drain output %q, want the job's state", out.String())
	}

	errOut.Reset()
	if code := runMain(io.Discard, &errOut, "drain", endpoint, "no-such-job"); code != 1 || !strings.Contains(errOut.String(), "NotFound") {
		t.Errorf("drain of an unknown job: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := runMain(io.Discard, &errOut, "cancel", endpoint, "no-such-job"); code != 1 || !strings.Contains(errOut.String(), "NotFound") {
		t.Errorf("cancel of an unknown job: exit %d, %q", code, errOut.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"cancel"},
		{"cancel", "a", "b"},
		{"drain"},
		{"checkpoints"},
		{"checkpoints", "a", "b"},
		{"savepoint"},
		{"savepoint", "--stop", "a", "b"},
		{"metrics"},
		{"metrics", "--all", "a", "b"},
		{"messages"},
		{"messages", "--follow", "a", "b"},
		{"jobs", "extra"},
		{"jobs", "--no-such-flag"},
		{"serve", "extra"},
		{"serve", "--log-format=yaml"}, // refused before it listens
		{"serve", "--log-level=loud"},
		{"serve", "--job-retention=-1s"},
	} {
		if code := runMain(io.Discard, io.Discard, args...); code != 2 {
			t.Errorf("weir %q: exit %d, want 2", args, code)
		}
	}
	if code := runMain(io.Discard, io.Discard, "help"); code != 0 {
		t.Errorf("weir help: exit %d, want 0", code)
	}
}

func runMain(stdout, stderr io.Writer, args ...string) int { return run(args, stdout, stderr) }
