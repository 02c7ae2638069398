package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weir-runner/weir/jobview"
	"github.com/weir-runner/weir/runner"
)

// listJobs prints every job of the service: its state, when it started,
// how long it ran (or has been running) and why it failed. Beam's GetJobs
// says nothing of the times or the error, so weir's own List gives them;
// a job service that is not weir's gets the columns GetJobs fills.
func listJobs(args []string, stdout io.Writer) error {
	fs := newFlagSet("jobs", "")
	var cf clientFlags
	cf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageErrorf("unexpected arguments %q", fs.Args())
	}
	client, conn, ctx, cancel, err := cf.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	defer cancel()

	sums, err := runner.ListJobs(ctx, conn)
	if status.Code(err) == codes.Unimplemented {
		resp, gerr := client.GetJobs(ctx, &jobpb.GetJobsRequest{})
		if gerr != nil {
			return fmt.Errorf("listing jobs on %s: %w", cf.endpoint, gerr)
		}
		sums, err = nil, nil
		for _, j := range resp.GetJobInfo() {
			sums = append(sums, jobview.Summary{ID: j.GetJobId(), Name: j.GetJobName(), State: j.GetState().String()})
		}
	}
	if err != nil {
		return fmt.Errorf("listing jobs on %s: %w", cf.endpoint, err)
	}
	return printJobs(stdout, sums)
}

func printJobs(w io.Writer, sums []jobview.Summary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tNAME\tSTATE\tSTART\tDURATION\tERROR")
	for _, j := range sums {
		start, dur := "-", "-"
		if !j.Start.IsZero() {
			start = j.Start.UTC().Format(time.RFC3339)
			dur = fmtSeconds(j.Seconds)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Name, j.State, start, dur, oneLine(j.Error, maxErrorWidth))
	}
	return tw.Flush()
}

// maxErrorWidth bounds the error column: the whole error is the job's
// last message (weir messages JOB).
const maxErrorWidth = 80

// oneLine is the first line of s, cut to at most n runes with an ellipsis.
func oneLine(s string, n int) string {
	first, _, more := strings.Cut(strings.TrimSpace(s), "\n")
	r := []rune(strings.TrimSpace(first))
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	if more {
		return string(r) + " …"
	}
	return string(r)
}

// fmtSeconds shows a duration to the millisecond under a second, to the
// second above.
func fmtSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
