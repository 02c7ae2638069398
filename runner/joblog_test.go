package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/fnapi"
)

// logBuffer collects a JSON handler's records; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// records returns every record written so far, decoded.
func (b *logBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

// find returns the records whose message is msg.
func find(recs []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// testJob is a job whose records go to a new logBuffer.
func testJob(name string) (*Job, *logBuffer) {
	var lb logBuffer
	j := NewJob("id-1", name, nil, nil)
	j.log = jobLogger(lb.logger(), j)
	return j, &lb
}

// TestWarnWritesMessageAndRecord: one Warn is a job message with the text
// and a log record with the job, the attributes given and the text.
func TestWarnWritesMessageAndRecord(t *testing.T) {
	j, lb := testJob("wordcount")
	j.Warn("weir: stage warning", "stage Count: something", logStage, "Count", logSubtask, 3)
	msgs, _, _ := j.Updates(0)
	if len(msgs) != 1 || msgs[0].GetMessageText() != "stage Count: something" ||
		msgs[0].GetImportance() != jobpb.JobMessage_JOB_MESSAGE_WARNING {
		t.Errorf("job messages %v, want the one warning", msgs)
	}
	recs := lb.records(t)
	if len(recs) != 1 {
		t.Fatalf("records %v, want one", recs)
	}
	want := map[string]any{"level": "WARN", "msg": "weir: stage warning", "job": "id-1", "job_name": "wordcount",
		"stage": "Count", "subtask": 3.0, "text": "stage Count: something"}
	for k, v := range want {
		if recs[0][k] != v {
			t.Errorf("record[%q] = %v, want %v", k, recs[0][k], v)
		}
	}
}

// TestJobStatesLogged: every change of state is a record at level Info;
// the terminal one says how long the job ran and, failed, why.
func TestJobStatesLogged(t *testing.T) {
	tests := []struct {
		name string
		end  func(*Job)
		msgs []string
		err  string
	}{
		{"done", func(j *Job) { j.SetState(jobpb.JobState_DONE) },
			[]string{"weir: job submitted", "weir: job running", "weir: job ended"}, ""},
		{"failed", func(j *Job) { j.Fail(context.DeadlineExceeded) },
			[]string{"weir: job submitted", "weir: job running", "weir: job ended"}, "context deadline exceeded"},
		{"cancelled", func(j *Job) { j.SetState(jobpb.JobState_CANCELLING); j.SetState(jobpb.JobState_CANCELLED) },
			[]string{"weir: job submitted", "weir: job running", "weir: job cancelling", "weir: job ended"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, lb := testJob(tt.name)
			j.SetState(jobpb.JobState_STARTING)
			j.SetState(jobpb.JobState_RUNNING)
			tt.end(j)
			j.SetState(jobpb.JobState_DONE) // after a terminal state: ignored, not logged
			recs := lb.records(t)
			var msgs []string
			for _, r := range recs {
				msgs = append(msgs, r["msg"].(string))
				if r["level"] != "INFO" || r["job"] != "id-1" || r["job_name"] != tt.name {
					t.Errorf("record %v lacks the job or is not at INFO", r)
				}
			}
			if strings.Join(msgs, "|") != strings.Join(tt.msgs, "|") {
				t.Fatalf("records %q, want %q", msgs, tt.msgs)
			}
			end := recs[len(recs)-1]
			st, _ := j.State()
			if end["state"] != st.String() || end["duration"] == nil {
				t.Errorf("end record %v, want state %v and a duration", end, st)
			}
			if got, _ := end["err"].(string); got != tt.err {
				t.Errorf("end record's err %q, want %q", got, tt.err)
			}
		})
	}
}

// TestCheckpointFailureLogged: a failed checkpoint that a subtask declined
// names that subtask's stage; one that failed otherwise names none.
func TestCheckpointFailureLogged(t *testing.T) {
	j, lb := testJob("ck")
	c := &jobCheckpoints{j: j, shape: []checkpoint.GraphNode{{Stage: "s1", Name: "Impulse"}, {Stage: "s2", Name: "GroupByKey"}}}
	c.declined, c.declinedIn = checkpoint.Task{Node: 1, Subtask: 2}, 7
	c.finished(checkpoint.Stats{ID: 7, Status: checkpoint.Failed, Reason: "disk full"})
	c.finished(checkpoint.Stats{ID: 8, Status: checkpoint.Failed, Reason: "expired"})
	recs := find(lb.records(t), "weir: checkpoint failed")
	if len(recs) != 2 {
		t.Fatalf("records %v, want two", recs)
	}
	if r := recs[0]; r["stage"] != "GroupByKey" || r["subtask"] != 2.0 || r["checkpoint"] != 7.0 || r["text"] != "checkpoint 7 failed: disk full" {
		t.Errorf("declined checkpoint's record %v", r)
	}
	if r := recs[1]; r["stage"] != nil || r["checkpoint"] != 8.0 {
		t.Errorf("expired checkpoint's record %v, want no stage", r)
	}
	if msgs, _, _ := j.Updates(0); len(msgs) != 2 || msgs[1].GetMessageText() != "checkpoint 8 failed: expired" {
		t.Errorf("job messages %v", msgs)
	}
}

// TestCheckpointCompletionsAreNotMessages: a completed checkpoint is a
// debug record of the server's log, not a job message: a job that
// checkpoints every second would otherwise fill its bounded messages
// with them and push its warnings out (the soak run found it).
func TestCheckpointCompletionsAreNotMessages(t *testing.T) {
	j, lb := testJob("ck")
	c := &jobCheckpoints{j: j}
	j.Warn("weir: stage warning", "a warning worth keeping")
	for id := range checkpoint.ID(maxMessages + 1) {
		c.finished(checkpoint.Stats{ID: id + 1, Status: checkpoint.Completed})
	}
	if msgs, _, _ := j.Updates(0); len(msgs) != 1 || msgs[0].GetMessageText() != "a warning worth keeping" {
		t.Errorf("%d job messages after %d checkpoints, want only the warning", len(msgs), maxMessages+1)
	}
	recs := find(lb.records(t), "weir: checkpoint completed")
	if len(recs) != maxMessages+1 {
		t.Fatalf("%d records of completed checkpoints, want %d", len(recs), maxMessages+1)
	}
	if r := recs[0]; r["level"] != "DEBUG" || r["checkpoint"] != 1.0 || r["job"] != "id-1" {
		t.Errorf("the first checkpoint's record %v, want it at DEBUG naming the job and checkpoint 1", r)
	}
}

// TestLostWorkerLogged: replacing a lost worker is a warning naming it and
// its environment, whether or not a new one starts.
func TestLostWorkerLogged(t *testing.T) {
	j, lb := testJob("workers")
	ws := newWorkerSet(nil, nil, j)
	if _, err := ws.Replace(t.Context(), "go", &fnapi.Worker{ID: "worker-3"}); err == nil {
		t.Fatal("Replace started a worker of an environment that is not defined")
	}
	recs := find(lb.records(t), "weir: SDK worker lost")
	if len(recs) != 1 || recs[0]["env"] != "go" || recs[0]["worker"] != "worker-3" || recs[0]["job"] != "id-1" {
		t.Errorf("records %v, want one of worker-3 in env go", recs)
	}
}

// TestLateDropsReachServerLog runs a pipeline that drops a late element
// on a server logging JSON: the drop is a record naming the job and the
// stage, beside the job's state changes.
func TestLateDropsReachServerLog(t *testing.T) {
	var lb logBuffer
	srv := startServer(t, NewLocalExecutor(), ServerOptions{Logger: lb.logger()})
	endpoint := *jobopts.Endpoint
	*jobopts.Endpoint = srv.s.Endpoint()
	defer func() { *jobopts.Endpoint = endpoint }()

	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	c := teststream.NewConfig()
	c.AddElements(1000, "a")
	c.AdvanceWatermark(40000) // [0, 10s) has expired
	c.AddElements(3000, "a")  // dropped
	win := beam.WindowInto(s, window.NewFixedWindows(10*time.Second), teststream.Create(s, c))
	passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), beam.ParDo(s, formatCount, stats.Count(s, win))), "a=1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := Execute(ctx, p); err != nil {
		t.Fatal(err)
	}
	jobs := srv.s.Jobs()
	id := string(jobs[len(jobs)-1].ID)

	// The client hears the job end as its state changes, and the server
	// writes "job ended" just after, outside the job's lock: wait for it.
	recs := lb.records(t)
	for len(find(recs, "weir: job ended")) == 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
		recs = lb.records(t)
	}
	drops := find(recs, "weir: late data dropped")
	if len(drops) != 1 {
		t.Fatalf("%d late-data records, want 1; log:\n%v", len(drops), recs)
	}
	d := drops[0]
	if d["level"] != "WARN" || d["job"] != id || d["job_name"] == "" || d["transform"] == "" ||
		!strings.Contains(d["text"].(string), d["stage"].(string)+" dropped 1 late element") {
		t.Errorf("late-data record %v", d)
	}
	for _, msg := range []string{"weir: job submitted", "weir: job running", "weir: job ended"} {
		found := false
		for _, r := range find(recs, msg) {
			found = found || r["job"] == id
		}
		if !found {
			t.Errorf("no record %q of job %s", msg, id)
		}
	}
}
