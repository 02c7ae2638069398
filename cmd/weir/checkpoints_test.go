package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/metrics"
	"github.com/weir-runner/weir/runner"
)

// TestCheckpointsCommand runs `weir checkpoints` against a job whose
// executor reports checkpoint metrics as the runner does, and one that
// reports none.
func TestCheckpointsCommand(t *testing.T) {
	ns := runner.CheckpointMetricsNamespace
	const ts = 1_700_000_000_000
	s := runner.NewServer(runner.ExecutorFunc(func(ctx context.Context, j *runner.Job) error {
		if j.Name == "checkpointed" {
			j.Metrics.AddSource(func() []*pipepb.MonitoringInfo {
				return []*pipepb.MonitoringInfo{
					metrics.UserCounter(ns, "completed", "checkpoints", 12),
					metrics.UserCounter(ns, "failed", "checkpoints", 1),
					metrics.UserGauge(ns, "status", "chk-13", ts, 1),
					metrics.UserGauge(ns, "trigger_unix_ms", "chk-13", ts, ts),
					metrics.UserGauge(ns, "duration_ms", "chk-13", ts, 250),
					metrics.UserGauge(ns, "bytes", "chk-13", ts, 4096),
					metrics.UserGauge(ns, "unaligned_subtasks", "chk-13", ts, 2),
					metrics.UserGauge(ns, "subtasks", "chk-13", ts, 8),
					metrics.UserGauge(ns, "status", "chk-12", ts, 2),
					metrics.UserGauge(ns, "alignment_ms", "chk-13/GroupByKey/Group[1]", ts, 37),
					metrics.UserGauge(ns, "unaligned", "chk-13/GroupByKey/Group[1]", ts, 1),
					metrics.UserGauge(ns, "bytes", "chk-13/Impulse[0]", ts, 512),
				}
			})
		}
		<-ctx.Done()
		return ctx.Err()
	}), runner.ServerOptions{StagingRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	start := func(name string) string {
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
	endpoint := "--endpoint=" + s.Endpoint()

	// The executor adds its metrics source when it starts: wait for it.
	id := start("checkpointed")
	var out, errOut bytes.Buffer
	for !strings.Contains(out.String(), "12 completed") {
		out.Reset()
		if code := runMain(&out, &errOut, "checkpoints", endpoint, id); code != 0 {
			t.Fatalf("checkpoints: exit %d: %s", code, errOut.String())
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 9 || lines[5] != "checkpoint 13 by subtask:" || !strings.HasPrefix(lines[6], "STAGE") ||
		!strings.HasPrefix(lines[7], "GroupByKey/Group  1") || !strings.Contains(lines[7], "37ms") || !strings.HasSuffix(lines[7], "true") ||
		!strings.HasPrefix(lines[8], "Impulse") || !strings.Contains(lines[8], "512") {
		t.Fatalf("output:\n%s", out.String())
	}
	if !strings.Contains(lines[0], "12 completed, 1 failed") ||
		!strings.HasPrefix(lines[1], "ID") || !strings.HasPrefix(lines[2], "13") || !strings.HasPrefix(lines[3], "12") {
		t.Fatalf("output:\n%s", out.String())
	}
	for _, want := range []string{"completed", "2023-11-14T22:13:20Z", "250ms", "4096", "2/8"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("row %q lacks %q", lines[2], want)
		}
	}
	if !strings.Contains(lines[3], "failed") {
		t.Errorf("row %q is not checkpoint 12 failed", lines[3])
	}

	out.Reset()
	if code := runMain(&out, &errOut, "checkpoints", endpoint, start("plain")); code != 0 {
		t.Fatalf("checkpoints: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "no checkpoint") {
		t.Errorf("output for a job without checkpoints: %q", out.String())
	}
}
