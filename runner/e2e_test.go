package runner

import (
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
)

// These tests run real Go SDK pipelines on the in-process server, with the
// SDK worker in this process (LOOPBACK).

type countFn struct{}

var elements = beam.NewCounter("weir.test", "elements")
var sizes = beam.NewDistribution("weir.test", "sizes")

func (*countFn) ProcessElement(ctx context.Context, v int, emit func(int)) {
	elements.Inc(ctx, 1)
	sizes.Update(ctx, int64(v))
	emit(v * 2)
}

func init() {
	register.DoFn3x0[context.Context, int, func(int)](&countFn{})
	register.Emitter1[int]()
}

func TestMetricsReachPipelineResult(t *testing.T) {
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	in := make([]int, 100)
	for i := range in {
		in[i] = i + 1
	}
	out := beam.ParDo(s, &countFn{}, beam.CreateList(s, in))
	passert.Sum(s, out, "doubled", 100, 2*5050)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Execute(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	// The client logs job messages, and a LOOPBACK worker sends the client's
	// logs to the runner: none of those may come back as job messages, or
	// they feed on themselves.
	jobs := inProcessServer().Jobs()
	msgs, _, _ := jobs[len(jobs)-1].Updates(0)
	for _, m := range msgs {
		if strings.Contains(m.GetMessageText(), "runnerlib") {
			t.Fatalf("job message echoes the client's own log: %.200s", m.GetMessageText())
		}
	}
	q := res.Metrics().Query(func(r beam.MetricResult) bool { return r.Namespace() == "weir.test" })
	if len(q.Counters()) != 1 || q.Counters()[0].Committed != 100 {
		t.Errorf("counters %+v, want elements=100", q.Counters())
	}
	if d := q.Distributions(); len(d) != 1 || d[0].Committed.Count != 100 || d[0].Committed.Sum != 5050 ||
		d[0].Committed.Min != 1 || d[0].Committed.Max != 100 {
		t.Errorf("distributions %+v, want count 100 sum 5050 min 1 max 100", d)
	}
}

// weirGoroutines counts goroutines running weir code.
func weirGoroutines() (int, string) {
	var b strings.Builder
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "weir-runner/weir/") && !strings.Contains(g, "e2e_test.go") {
			n += goroutineCount(g)
		}
	}
	return n, b.String()
}

// goroutineCount reads the "N @ ..." header of a pprof debug=1 record.
func goroutineCount(rec string) int {
	var n int
	for _, line := range strings.Split(rec, "\n") {
		if _, err := fmt.Sscanf(line, "%d @", &n); err == nil {
			return n
		}
	}
	return 1
}

// TestCancelStopsWorkersWithoutLeaks cancels an unbounded pipeline (a
// periodic impulse that never ends) while it runs, and checks the job ends
// CANCELLED and every goroutine weir started for it is gone.
func TestCancelStopsWorkersWithoutLeaks(t *testing.T) {
	skipOnBeamDataRace(t, "cancelling a job mid-bundle")
	TestMetricsReachPipelineResult(t) // starts the in-process server
	baseline, _ := weirGoroutines()

	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	ticks := periodic.Impulse(s, time.Now(), time.Now().Add(24*time.Hour), 10*time.Millisecond, false)
	passert.NonEmpty(s, ticks)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Execute(ctx, p); done <- err }()

	srv := inProcessServer()
	var job *Job
	for job == nil {
		for _, j := range srv.Jobs() {
			if st, _ := j.State(); st == jobpb.JobState_RUNNING {
				job = j
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("the unbounded job never started running")
		case <-time.After(20 * time.Millisecond):
		}
	}
	time.Sleep(200 * time.Millisecond) // let it tick
	if _, err := srv.Cancel(ctx, &jobpb.CancelJobRequest{JobId: string(job.ID)}); err != nil {
		t.Fatal(err)
	}
	<-done // the SDK treats CANCELLED as a normal end: no error to check

	if st, _ := job.State(); st != jobpb.JobState_CANCELLED {
		t.Errorf("job state %v, want CANCELLED", st)
	}
	for {
		n, dump := weirGoroutines()
		if n <= baseline {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d weir goroutines after cancel, %d before:\n%s", n, baseline, dump)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
