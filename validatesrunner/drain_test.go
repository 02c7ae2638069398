package validatesrunner

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fakeJobs is a JobService whose jobs run until drained. Run starts a job
// named by its preparation ID; Drain refuses jobs whose name says
// "refused", as Prism refuses every drain.
type fakeJobs struct {
	jobpb.UnimplementedJobServiceServer
	mu      sync.Mutex
	names   map[string]string // guarded by mu
	states  map[string]jobpb.JobState_Enum
	drained []string // the jobs Drain was called on
}

func (f *fakeJobs) add(id, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names[id], f.states[id] = name, jobpb.JobState_RUNNING
}

func (f *fakeJobs) Run(_ context.Context, req *jobpb.RunJobRequest) (*jobpb.RunJobResponse, error) {
	f.mu.Lock()
	id := fmt.Sprintf("job-%d", len(f.names)+1)
	f.mu.Unlock()
	f.add(id, req.GetPreparationId())
	return &jobpb.RunJobResponse{JobId: id}, nil
}

func (f *fakeJobs) GetJobs(context.Context, *jobpb.GetJobsRequest) (*jobpb.GetJobsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &jobpb.GetJobsResponse{}
	for id, name := range f.names {
		resp.JobInfo = append(resp.JobInfo, &jobpb.JobInfo{JobId: id, JobName: name, State: f.states[id]})
	}
	return resp, nil
}

func (f *fakeJobs) GetState(_ context.Context, req *jobpb.GetJobStateRequest) (*jobpb.JobStateEvent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &jobpb.JobStateEvent{State: f.states[req.GetJobId()]}, nil
}

func (f *fakeJobs) Drain(_ context.Context, req *jobpb.DrainJobRequest) (*jobpb.DrainJobResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := req.GetJobId()
	f.drained = append(f.drained, id)
	if strings.Contains(f.names[id], "refused") {
		return nil, status.Error(codes.Unimplemented, "method Drain not implemented")
	}
	f.states[id] = jobpb.JobState_DRAINING
	time.AfterFunc(100*time.Millisecond, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.states[id] = jobpb.JobState_DRAINED
	})
	return &jobpb.DrainJobResponse{State: jobpb.JobState_DRAINING}, nil
}

// TestRunPackageDrains runs testdata/drainsuite against a fake job
// service: the harness drains the job of a listed test once it has run
// DrainAfter, and records the answer and the state it ended in; a job
// that was on the server before the test, though named alike, is left
// alone; a refused drain stops the test at once instead of leaving it to
// the watchdog, and the tests after it run in a new process.
func TestRunPackageDrains(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a test binary")
	}
	jobs := &fakeJobs{names: map[string]string{}, states: map[string]jobpb.JobState_Enum{}}
	jobs.add("old", "go-testdrained-7") // left by an earlier run
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	jobpb.RegisterJobServiceServer(srv, jobs)
	go srv.Serve(l)
	defer srv.Stop()

	dir := t.TempDir()
	o := &Options{
		Go:          "go",
		BinDir:      dir,
		TmpDir:      dir,
		Endpoint:    l.Addr().String(),
		TestTimeout: time.Minute,
		PkgTimeout:  2 * time.Minute,
		DrainAfter:  300 * time.Millisecond,
		DrainTests:  []DrainTest{{Package: "drainsuite", Test: "TestDrained"}, {Package: "drainsuite", Test: "TestRefused"}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pr := RunPackage(ctx, o, Selection{Package: "drainsuite", Import: "./testdata/drainsuite"})

	got := map[string]TestResult{}
	for _, r := range pr.Tests {
		got[r.Name] = r
	}
	d := got["TestDrained"]
	if d.Status != Pass || len(d.Drains) != 1 {
		t.Fatalf("TestDrained: %s with drains %+v (%s), want a pass and one drain", d.Status, d.Drains, d.Reason)
	}
	if r := d.Drains[0]; r.Job != "job-2" || r.Answer != "DRAINING" || r.Final != "DRAINED" || r.Refused || r.After < 0.3 {
		t.Errorf("TestDrained's drain %+v, want job-2 drained after 0.3s or more, answered DRAINING, ended DRAINED", r)
	}
	r := got["TestRefused"]
	if r.Status != Fail || !strings.Contains(r.Reason, "refused JobService.Drain (Unimplemented: method Drain not implemented)") ||
		len(r.Drains) != 1 || !r.Drains[0].Refused || r.Seconds > 20 {
		t.Errorf("TestRefused: %s in %.1fs, reason %q, drains %+v; want a failure naming the refusal, well before the watchdog", r.Status, r.Seconds, r.Reason, r.Drains)
	}
	// The package's note of the refusal goes whole when TestRefused is
	// re-run and merged.
	if !strings.Contains(pr.Error, "TestRefused") || mergeNotes(pr.Error, "", []string{"TestRefused"}) != "" {
		t.Errorf("package notes %q: want a note naming TestRefused, all of which a re-run of it replaces", pr.Error)
	}
	if got["TestAfter"].Status != Pass {
		t.Errorf("TestAfter: %+v, want a pass in a new process", got["TestAfter"])
	}
	jobs.mu.Lock()
	defer jobs.mu.Unlock()
	if slices.Contains(jobs.drained, "old") || len(jobs.drained) != 2 {
		t.Errorf("Drain called on %v, want the two tests' jobs only", jobs.drained)
	}
}
