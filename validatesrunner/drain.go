package validatesrunner

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// DefaultDrainAfter is how long a drained test's job runs before the
// harness drains it: TestDrain's SDF claims a position a second.
const DefaultDrainAfter = 5 * time.Second

// DrainRecord is what the harness did to drain one job of a test, and how
// the job answered.
type DrainRecord struct {
	Job string `json:"job"`
	// After is how long the job had been RUNNING, as the harness saw it,
	// when it was drained.
	After float64 `json:"after_seconds"`
	// Answer is the state the Drain call answered (DRAINING), or its
	// error: the gRPC code and message.
	Answer  string `json:"answer"`
	Refused bool   `json:"refused,omitempty"`
	// Final is the job's last state the harness saw (DRAINED once the
	// drain completed), and Seconds how long after the Drain call it was
	// first seen in it.
	Final   string  `json:"final,omitempty"`
	Seconds float64 `json:"final_after_seconds,omitempty"`

	at time.Time // of the Drain call
}

// String says what happened in one sentence.
func (r DrainRecord) String() string {
	if r.Refused {
		return fmt.Sprintf("job %s had run %.0fs when the harness called JobService.Drain, which the server refused: %s", r.Job, r.After, r.Answer)
	}
	s := fmt.Sprintf("job %s drained through JobService.Drain after it had run %.0fs; Drain answered %s", r.Job, r.After, r.Answer)
	switch {
	case r.Final == "":
	case r.Final == r.Answer:
		s += fmt.Sprintf("; still %s when the test ended", r.Final)
	default:
		s += fmt.Sprintf("; the job ended %s %.0fs later", r.Final, r.Seconds)
	}
	return s
}

// testJobName matches the names test/integration gives the jobs of a
// test: integration.CheckFilters sets --job_name to go-<test, lower
// case>-<random number below 1000>.
func testJobName(test string) *regexp.Regexp {
	return regexp.MustCompile(`^go-` + regexp.QuoteMeta(strings.ToLower(test)) + `-\d+$`)
}

// drainer drains the jobs one test submits: every job named as
// test/integration names the test's jobs that was not on the server when
// the test first connected to it, once it has been RUNNING for after.
// It polls GetJobs; its connection goes to the server, not through the
// counting proxy.
type drainer struct {
	test   string
	name   *regexp.Regexp
	after  time.Duration
	client jobpb.JobServiceClient
	conn   *grpc.ClientConn
	cancel context.CancelFunc
	done   chan struct{}

	mu struct {
		sync.Mutex
		records []DrainRecord // guarded by mu
		refusal string        // the answer of a Drain call that failed; guarded by mu
	}
}

// drainPoll is how often a drainer asks the server for its jobs.
const drainPoll = 200 * time.Millisecond

// startDrainer snapshots the server's jobs, then drains the test's new
// jobs in the background until stop. The snapshot is taken before it
// returns, so a caller that holds the test's first connection back until
// then never counts the test's own job as an old one.
func startDrainer(endpoint, test string, after time.Duration) (*drainer, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("vr: drain %s: job service %s: %w", test, endpoint, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &drainer{test: test, name: testJobName(test), after: after, client: jobpb.NewJobServiceClient(conn),
		conn: conn, cancel: cancel, done: make(chan struct{})}
	old := map[string]bool{}
	jobs, err := d.jobs(ctx)
	for _, j := range jobs {
		old[j.GetJobId()] = true
	}
	go d.loop(ctx, old)
	return d, err
}

func (d *drainer) jobs(ctx context.Context) ([]*jobpb.JobInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := d.client.GetJobs(ctx, &jobpb.GetJobsRequest{})
	return resp.GetJobInfo(), err
}

func (d *drainer) loop(ctx context.Context, old map[string]bool) {
	defer close(d.done)
	running := map[string]time.Time{} // when each new job was first seen RUNNING
	drained := map[string]bool{}
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		jobs, err := d.jobs(ctx)
		if err != nil {
			continue // the server may be restarting; the watchdog bounds the test
		}
		now := time.Now()
		for _, j := range jobs {
			id, st := j.GetJobId(), j.GetState()
			if old[id] || !d.name.MatchString(j.GetJobName()) {
				continue
			}
			if drained[id] {
				d.seen(id, st)
				continue
			}
			if st != jobpb.JobState_RUNNING {
				continue
			}
			if _, ok := running[id]; !ok {
				running[id] = now
			}
			if ran := now.Sub(running[id]); ran >= d.after {
				drained[id] = true
				d.drain(ctx, id, ran)
			}
		}
	}
}

// drain calls Drain on job id and records the answer.
func (d *drainer) drain(ctx context.Context, id string, ran time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := d.client.Drain(ctx, &jobpb.DrainJobRequest{JobId: id})
	rec := DrainRecord{Job: id, After: round2(ran.Seconds()), at: time.Now()}
	if err != nil {
		s := status.Convert(err)
		rec.Answer, rec.Refused = fmt.Sprintf("%v: %s", s.Code(), OneLine(s.Message(), 200)), true
	} else {
		rec.Answer = resp.GetState().String()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.records = append(d.mu.records, rec)
	if rec.Refused && d.mu.refusal == "" {
		d.mu.refusal = rec.Answer
	}
}

// seen records a drained job's state, with how long after its drain the
// state was first seen.
func (d *drainer) seen(id string, st jobpb.JobState_Enum) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.mu.records {
		if r := &d.mu.records[i]; r.Job == id {
			r.see(st.String())
		}
	}
}

func (r *DrainRecord) see(state string) {
	if !r.Refused && r.Final != state {
		r.Final, r.Seconds = state, round2(time.Since(r.at).Seconds())
	}
}

// refusal returns the answer of a Drain the server refused, if any: the
// job cannot end then, and the test cannot pass.
func (d *drainer) refusal() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.refusal
}

// stop ends the polling, asks each drained job's state a last time and
// returns the records.
func (d *drainer) stop() []DrainRecord {
	d.cancel()
	<-d.done
	defer d.conn.Close()
	d.mu.Lock()
	recs := append([]DrainRecord(nil), d.mu.records...)
	d.mu.Unlock()
	for i := range recs {
		r := &recs[i]
		if r.Refused || isTerminal(r.Final) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ev, err := d.client.GetState(ctx, &jobpb.GetJobStateRequest{JobId: r.Job})
		cancel()
		if err == nil {
			r.see(ev.GetState().String())
		}
	}
	return recs
}

func isTerminal(state string) bool {
	switch state {
	case "DONE", "FAILED", "CANCELLED", "DRAINED", "UPDATED":
		return true
	}
	return false
}

// drainSet holds the drainers of one test process, one per drained test.
type drainSet struct {
	endpoint string
	pkg      string
	list     []DrainTest
	after    time.Duration
	log      func(format string, a ...any)

	mu struct {
		sync.Mutex
		byTest map[string]*drainer // guarded by mu
	}
}

func newDrainSet(o *Options, pkg string) *drainSet {
	s := &drainSet{endpoint: o.Endpoint, pkg: pkg, list: o.DrainTests, after: o.DrainAfter, log: o.logf}
	if s.list == nil {
		s.list = DrainTests
	}
	if s.after <= 0 {
		s.after = DefaultDrainAfter
	}
	s.mu.byTest = map[string]*drainer{}
	return s
}

// onConn is called when test connects to the job server, before the
// connection goes through: the first connection of a drained test starts
// its drainer.
func (s *drainSet) onConn(test string) {
	if test == "" || !needsDrain(s.list, s.pkg, test) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.byTest[test] != nil {
		return
	}
	d, err := startDrainer(s.endpoint, test, s.after)
	if err != nil {
		s.log("vr: %s: %s: %v", s.pkg, test, err)
		if d == nil {
			return
		}
	}
	s.log("vr: %s: %s: will drain its job through JobService.Drain once it has run %v", s.pkg, test, s.after)
	s.mu.byTest[test] = d
}

// refusal returns the answer of a Drain of test's job that the server
// refused, or "".
func (s *drainSet) refusal(test string) string {
	s.mu.Lock()
	d := s.mu.byTest[test]
	s.mu.Unlock()
	if d == nil {
		return ""
	}
	return d.refusal()
}

// stop stops the drainer of test, if it has one, and returns its records.
func (s *drainSet) stop(test string) []DrainRecord {
	s.mu.Lock()
	d := s.mu.byTest[test]
	delete(s.mu.byTest, test)
	s.mu.Unlock()
	if d == nil {
		return nil
	}
	return d.stop()
}

// tests returns the tests that have a drainer.
func (s *drainSet) tests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for t := range s.mu.byTest {
		out = append(out, t)
	}
	return out
}
