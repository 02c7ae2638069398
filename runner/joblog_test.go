package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
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
