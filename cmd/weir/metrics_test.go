package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/metrics"
	"github.com/weir-runner/weir/runner"
)

// elementCount is the SDKs' system metric of a PCollection's elements.
func elementCount(pcoll string, n int64) *pipepb.MonitoringInfo {
	mi := metrics.UserCounter("", "", "", n)
	return &pipepb.MonitoringInfo{Urn: "beam:metric:element_count:v1", Type: mi.GetType(),
		Labels: map[string]string{"PCOLLECTION": pcoll}, Payload: mi.GetPayload()}
}

// TestMetricsCommand runs `weir metrics` against a job whose bundles
// report a user counter and distribution (one bundle retried), an element
// count, and weir's own late-data counter.
func TestMetricsCommand(t *testing.T) {
	reported := make(chan struct{})
	s, endpoint := startTestServer(t, func(ctx context.Context, j *runner.Job) error {
		j.Metrics.Attempt([]*pipepb.MonitoringInfo{metrics.UserCounter("wc", "words", "Split", 3)}) // lost with its worker
		j.Metrics.Commit([]*pipepb.MonitoringInfo{
			metrics.UserCounter("wc", "words", "Split", 5),
			metrics.UserDistribution("wc", "lengths", "Split", 5, 20, 1, 9),
			elementCount("pc1", 5),
		})
		j.Metrics.AddSource(func() []*pipepb.MonitoringInfo {
			return []*pipepb.MonitoringInfo{metrics.UserCounter("weir", "dropped_late_elements", "e7", 0)}
		})
		close(reported)
		<-ctx.Done()
		return ctx.Err()
	})
	id := submit(t, s, "wordcount")
	<-reported

	var out, errOut bytes.Buffer
	if code := runMain(&out, &errOut, "metrics", endpoint, id); code != 0 {
		t.Fatalf("metrics: exit %d: %s", code, errOut.String())
	}
	want := []string{
		"NAMESPACE NAME TRANSFORM KIND COMMITTED ATTEMPTED",
		"wc lengths Split distribution count=5 sum=20 min=1 max=9 mean=4 count=5 sum=20 min=1 max=9 mean=4",
		"wc words Split counter 5 8",
		"weir dropped_late_elements e7 counter 0 0",
	}
	if got := fields(out.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("output:\n%s\nwant rows:\n%s", out.String(), strings.Join(want, "\n"))
	}

	out.Reset()
	if code := runMain(&out, &errOut, "metrics", "--all", endpoint, id); code != 0 {
		t.Fatalf("metrics --all: exit %d: %s", code, errOut.String())
	}
	if got := fields(out.String()); len(got) != 5 || got[1] != "beam element_count pc1 counter 5 5" {
		t.Errorf("output with --all:\n%s", out.String())
	}

	errOut.Reset()
	if code := runMain(io.Discard, &errOut, "metrics", endpoint, "no-such-job"); code != 1 || !strings.Contains(errOut.String(), "NotFound") {
		t.Errorf("metrics of an unknown job: exit %d, %q", code, errOut.String())
	}
}

// fields is each line of a table with its columns' padding collapsed.
func fields(table string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		out = append(out, strings.Join(strings.Fields(line), " "))
	}
	return out
}

// TestPrintMetricsOneSide: a metric only one list has shows "-" on the
// other, and a payload that does not decode says so in its cell.
func TestPrintMetricsOneSide(t *testing.T) {
	bad := metrics.UserCounter("u", "bad", "T", 1)
	bad.Payload = nil
	var out bytes.Buffer
	err := printMetrics(&out, &jobpb.MetricResults{
		Attempted: []*pipepb.MonitoringInfo{metrics.UserGauge("u", "g", "T", 1, 7), bad},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	rows := fields(out.String())
	if len(rows) != 3 || !strings.HasPrefix(rows[1], "u bad T beam:metrics:sum_int64:v1 - (metric") ||
		rows[2] != "u g T gauge - 7" {
		t.Errorf("output:\n%s", out.String())
	}
}
