package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/runner"
)

// listCheckpoints prints a job's checkpoint statistics. They come from the
// job's metrics (GetJobMetrics), where the runner reports them: the totals
// and the last checkpoints it keeps, newest first.
func listCheckpoints(args []string, stdout io.Writer) error {
	return onJob("checkpoints", args, func(ctx context.Context, client jobpb.JobServiceClient, id, endpoint string) error {
		resp, err := client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id})
		if err != nil {
			return fmt.Errorf("metrics of job %s on %s: %w", id, endpoint, err)
		}
		return printCheckpoints(stdout, id, resp.GetMetrics().GetCommitted())
	})
}

// printCheckpoints prints the checkpoint statistics in a job's metrics.
func printCheckpoints(stdout io.Writer, id string, metrics []*pipepb.MonitoringInfo) error {
	r := runner.ReadCheckpointMetrics(metrics)
	if r.Completed == 0 && r.Failed == 0 && r.InProgress == 0 && len(r.Checkpoints) == 0 {
		fmt.Fprintf(stdout, "job %s has taken no checkpoint (does it set --%s?)\n", id, runner.CheckpointIntervalOption)
		return nil
	}
	fmt.Fprintf(stdout, "job %s: %d completed, %d failed, %d in progress\n", id, r.Completed, r.Failed, r.InProgress)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tTRIGGERED\tDURATION\tSIZE\tIN-FLIGHT\tSTART-DELAY\tALIGNMENT\tSYNC\tASYNC\tUNALIGNED")
	for _, c := range r.Checkpoints {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%v\t%d\t%d\t%v\t%v\t%v\t%v\t%d/%d\n", c.ID, c.Status,
			c.Trigger.UTC().Format(time.RFC3339), c.Duration, c.Bytes, c.InFlightBytes,
			c.MaxStartDelay, c.MaxAlignment, c.MaxSync, c.MaxAsync, c.Unaligned, c.Subtasks)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Subtasks) == 0 {
		return nil
	}
	fmt.Fprintf(stdout, "\ncheckpoint %d by subtask:\n", r.Subtasks[0].Checkpoint)
	fmt.Fprintln(tw, "STAGE\tSUBTASK\tSTART-DELAY\tALIGNMENT\tSYNC\tASYNC\tSIZE\tIN-FLIGHT\tUNALIGNED")
	for _, s := range r.Subtasks {
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%v\t%v\t%d\t%d\t%v\n", s.Stage, s.Subtask, s.StartDelay, s.Alignment,
			s.Sync, s.Async, s.Bytes, s.InFlightBytes, s.Unaligned)
	}
	return tw.Flush()
}
