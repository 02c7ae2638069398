package webui

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-runner/weir/webui/uitest"
)

var sel = uitest.TestID

// TestBrowser drives the page in headless Chromium against a streaming job
// that moves on at every poll: the list, the job's stage graph, a
// watermark changing between two polls, a savepoint that works and one
// that fails, a checkpoint's details kept open across refreshes, a stage
// filter, and a drain that ends the job DRAINED and stops the polling.
//
// WEIR_UI_SCREENSHOTS=dir saves fake-jobs.png and fake-job.png there
// (docs/ui has the committed ones).
func TestBrowser(t *testing.T) {
	b := uitest.New(t)
	fake := newStreamingFake()
	srv := httptest.NewServer(Handler(fake))
	t.Cleanup(srv.Close)
	rendered := map[string]bool{} // every data-testid seen on any page

	// The list.
	b.Navigate(srv.URL + "/")
	row := sel(TestIDJobRow, "data-job-id", streamID)
	b.WaitVisible(row)
	b.WaitCount(sel(TestIDJobRow), 1+len(finished))
	if got := b.Text(row + " " + sel(TestIDJobName)); got != "clicks-per-user" {
		t.Errorf("job name in the list = %q", got)
	}
	b.WaitText(row+" "+sel(TestIDJobState), uitest.Equals("RUNNING"))
	b.WaitText(sel(TestIDJobRow, "data-job-id", "clicks-3")+" "+sel(TestIDJobError), uitest.Contains("bundle failed 3 times"))
	b.WaitText(sel(TestIDPollStatus), uitest.Contains("live"))
	collect(b, rendered)
	shoot(t, b, "fake-jobs.png")

	// The job's page and its graph: one box per stage, with the names.
	b.Click(row + " " + sel(TestIDJobLink))
	b.WaitCount(sel(TestIDStageNode), len(fakeStages))
	var want []string
	for _, fs := range fakeStages {
		want = append(want, fs.name)
	}
	got := b.Attrs(sel(TestIDStageNode), "data-stage-name")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("stage nodes = %q, want %q", got, want)
	}
	if n := b.Count(sel(TestIDStageEdge)); n != len(fakeEdges) {
		t.Errorf("%d stage edges drawn, want %d", n, len(fakeEdges))
	}
	checkNoOverlap(t, b)
	if got := b.Text(sel(TestIDStageNode, "data-stage-name", "Window 1m / Count") + " " + sel(TestIDStageParallelism)); got != "×4" {
		t.Errorf("parallelism of the window = %q, want ×4", got)
	}

	// A watermark moves between two polls.
	wm := sel(TestIDStageNode, "data-stage-name", "Parse JSON") + " " + sel(TestIDStageWatermark)
	first := b.WaitText(wm, uitest.Func("a time", func(s string) bool { return strings.Contains(s, ":") }))
	b.WaitText(wm, uitest.Not(uitest.Equals(first)))
	if got := b.Text(sel(TestIDStageNode, "data-stage-name", "Read clicks (Kafka)") + " " + sel(TestIDStageRate)); !strings.HasSuffix(got, "k/s") {
		t.Errorf("source rate = %q, want thousands per second", got)
	}

	// Tables.
	b.WaitCount(sel(TestIDSubtaskRow), 20) // the parallelisms add to 20
	b.WaitCount(sel(TestIDPartitionRow), 5)
	b.WaitText(sel(TestIDPartitionRow, "data-topic", "clicks", "data-partition", "3")+` [data-col="paused"]`, uitest.Equals("paused"))
	b.WaitCount(sel(TestIDAlignmentRow), 1)
	b.WaitCount(sel(TestIDLateRow), 2)
	b.WaitCount(sel(TestIDUserMetricRow), 4)
	b.WaitText(sel(TestIDWorkers)+` [data-col="lost"] .v`, uitest.Equals("1"))
	if b.Count(sel(TestIDMessageRow)) == 0 {
		t.Error("no messages shown")
	}

	// Clicking a stage lists only its subtasks; clicking again, all.
	b.Click(sel(TestIDStageNode, "data-stage-name", "Window 1m / Count"))
	b.WaitCount(sel(TestIDSubtaskRow), 4)
	if names := b.Attrs(sel(TestIDSubtaskRow), "data-stage-name"); slices.ContainsFunc(names, func(n string) bool { return n != "Window 1m / Count" }) {
		t.Errorf("filtered subtasks of %q", names)
	}
	b.Click(sel(TestIDStageNode, "data-stage-name", "Window 1m / Count"))
	b.WaitCount(sel(TestIDSubtaskRow), 20)

	// A checkpoint's details stay open across refreshes.
	cp := b.Attrs(sel(TestIDCheckpointRow, "data-status", "completed"), "data-checkpoint-id")[0]
	b.Click(sel(TestIDCheckpointRow, "data-checkpoint-id", cp) + " " + sel(TestIDCheckpointToggle))
	details := sel(TestIDCheckpointDetails, "data-checkpoint-id", cp)
	b.WaitVisible(details)
	waitPolls(t, fake, 2)
	b.WaitVisible(details + " " + sel(TestIDCheckpointSubtaskRow))

	// Savepoint: its location, then a failure with the backend's reason.
	b.Click(sel(TestIDBtnSavepoint))
	b.WaitText(sel(TestIDActionResult), uitest.Contains("/var/lib/weir/savepoints/stream-1/sp-1"))
	b.WaitVisible(sel(TestIDCheckpointRow, "data-checkpoint-id", "1001"))
	collect(b, rendered)
	shoot(t, b, "fake-job.png")
	fake.FailSavepoints(true)
	b.WaitEnabled(sel(TestIDBtnSavepoint))
	b.Click(sel(TestIDBtnSavepoint))
	b.WaitText(sel(TestIDActionResult), uitest.Contains("no space left on device"))
	if got := b.Attrs(sel(TestIDActionResult), "data-outcome"); !slices.Equal(got, []string{"error"}) {
		t.Errorf("data-outcome after a failed savepoint = %q", got)
	}

	// Drain: the state goes DRAINED, the watermarks to +∞, the buttons
	// off, and the page stops polling after one more read.
	b.WaitEnabled(sel(TestIDBtnDrain))
	b.Click(sel(TestIDBtnDrain))
	b.WaitText(sel(TestIDActionResult), uitest.Contains("Drain requested"))
	b.WaitText(sel(TestIDJobState), uitest.Equals("DRAINED"))
	b.WaitText(wm, uitest.Equals("+∞"))
	b.WaitText(sel(TestIDPollStatus), uitest.Contains("not updating"))
	for _, btn := range []string{TestIDBtnCancel, TestIDBtnDrain, TestIDBtnSavepoint} {
		if !uitest.Eval[bool](b, `document.querySelector('`+sel(btn)+`').disabled`) {
			t.Errorf("%s is enabled on a drained job", btn)
		}
	}
	stoppedAt := fake.Polls()
	time.Sleep(2500 * time.Millisecond) // two and a half poll intervals
	if n := fake.Polls(); n != stoppedAt {
		t.Errorf("the page read the drained job %d more times after it stopped", n-stoppedAt)
	}

	// An unknown job, and back to the list, where the job is DRAINED.
	b.SetHash("#/jobs/no-such-job")
	b.WaitVisible(sel(TestIDJobNotFound))
	collect(b, rendered)
	b.Click(sel(TestIDBackToJobs))
	b.WaitText(row+" "+sel(TestIDJobState), uitest.Equals("DRAINED"))

	documented := documentedTestIDs(t)
	for id := range rendered {
		if !slices.Contains(documented, id) {
			t.Errorf("the page renders data-testid %q, which testids.go does not document", id)
		}
	}
}

// TestBrowserEmptyList: a server with no jobs says so.
func TestBrowserEmptyList(t *testing.T) {
	b := uitest.New(t)
	srv := httptest.NewServer(Handler(&stubBackend{}))
	t.Cleanup(srv.Close)
	b.Navigate(srv.URL + "/")
	b.WaitText(sel(TestIDJobsEmpty), uitest.Contains("No jobs yet"))
}

// collect adds the data-testid values the page shows now to seen.
func collect(b *uitest.Browser, seen map[string]bool) {
	for _, id := range b.Attrs("[data-testid]", "data-testid") {
		seen[id] = true
	}
}

// checkNoOverlap: the layout keeps stage boxes apart.
func checkNoOverlap(t *testing.T, b *uitest.Browser) {
	t.Helper()
	type box struct{ X, Y, W, H float64 }
	boxes := uitest.Eval[[]box](b, `[...document.querySelectorAll('`+sel(TestIDStageNode)+`')].map((g) => {
		const r = g.querySelector('rect').getBoundingClientRect();
		return {X: r.x, Y: r.y, W: r.width, H: r.height};
	})`)
	for i, p := range boxes {
		for _, q := range boxes[i+1:] {
			if p.X < q.X+q.W && q.X < p.X+p.W && p.Y < q.Y+q.H && q.Y < p.Y+p.H {
				t.Errorf("stage boxes overlap: %+v and %+v", p, q)
			}
		}
	}
}

// waitPolls waits until the page has read the job n more times.
func waitPolls(t *testing.T, f *streamingFake, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	target := f.Polls() + n
	for f.Polls() < target {
		select {
		case <-ctx.Done():
			t.Fatalf("the page read the job %d times, want %d", f.Polls(), target)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func shoot(t *testing.T, b *uitest.Browser, name string) {
	t.Helper()
	if dir := os.Getenv("WEIR_UI_SCREENSHOTS"); dir != "" {
		b.Screenshot(filepath.Join(dir, name))
	}
}
