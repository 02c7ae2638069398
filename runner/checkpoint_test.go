package runner

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/checkpoint"
)

func TestCheckpointOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts map[string]any
		want string // the config as "interval mode aligned-timeout timeout tolerable keep dir"
		err  string
	}{
		{"off by default", nil, "", ""},
		{"interval only", map[string]any{"weir_checkpoint_interval": "10s"}, "10s aligned 0s 0s 0 0 /state/jobs/job-1/checkpoints", ""},
		{"every option", map[string]any{"beam:option:go_options:v1": map[string]any{"options": map[string]any{
			"weir_checkpoint_interval": "1m", "weir_checkpoint_mode": "aligned-timeout", "weir_checkpoint_aligned_timeout": "2s",
			"weir_checkpoint_timeout": "5m", "weir_checkpoint_tolerable_failures": "3", "weir_checkpoint_keep": "5",
			"weir_checkpoint_dir": "/ckpt"}}}, "1m0s aligned-timeout 2s 5m0s 3 5 /ckpt", ""},
		{"bad interval", map[string]any{"weir_checkpoint_interval": "often"}, "", `weir_checkpoint_interval="often"`},
		{"negative interval", map[string]any{"weir_checkpoint_interval": "-1s"}, "", `weir_checkpoint_interval="-1s"`},
		{"bad mode", map[string]any{"weir_checkpoint_interval": "1s", "weir_checkpoint_mode": "sideways"}, "", "sideways"},
		{"timeout mode without its timeout", map[string]any{"weir_checkpoint_interval": "1s", "weir_checkpoint_mode": "aligned-timeout"},
			"", "weir_checkpoint_aligned_timeout"},
		{"bad count", map[string]any{"weir_checkpoint_interval": "1s", "weir_checkpoint_keep": "-2"}, "", "weir_checkpoint_keep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := structpb.NewStruct(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			c, err := checkpointOptions(&Job{ID: "job-1", Options: st}, "/state")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if c != nil {
				o := c.coord
				got = strings.Join([]string{o.Interval.String(), o.Mode.String(), o.AlignedTimeout.String(), o.Timeout.String(),
					itoa(o.TolerableFailures), itoa(c.keep), c.dir}, " ")
			}
			if got != tc.want {
				t.Fatalf("config %q, want %q", got, tc.want)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func modKey(p int) (int, int) { return p % 5, p }

func sumGroup(_ int, vs func(*int) bool, emit func(int)) {
	total, v := 0, 0
	for vs(&v) {
		total += v
	}
	emit(total)
}

func init() {
	register.Function1x2(modKey)
	register.Function3x0(sumGroup)
	register.Iter1[int]()
	register.Emitter1[int]()
}

// runCheckpointed runs an unbounded job (an endless SDF, keyed and grouped
// in the global window, so the group's shuffle holds state until the end)
// with the given checkpoint options, waits for `want` completed
// checkpoints, then drains it. A drain truncates the SDF to end before
// drainEnd, so the output is the same whenever it happens: passert checks
// it inside the job.
func runCheckpointed(t *testing.T, opts map[string]string, want int64) *Job {
	t.Helper()
	for k, v := range opts {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	out := beam.ParDo(s, &endlessFn{}, beam.Impulse(s))
	sums := beam.ParDo(s, sumGroup, beam.GroupByKey(s, beam.ParDo(s, modKey, out)))
	passert.Count(s, out, "positions", drainEnd-1)
	passert.Count(s, sums, "groups", 5)
	passert.Sum(s, sums, "sums", 5, (drainEnd-1)*drainEnd/2)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Execute(ctx, p); done <- err }()
	job := waitRunning(ctx, t)
	for completed(job) < want {
		select {
		case err := <-done:
			t.Fatalf("the job ended before %d checkpoints completed: %v", want, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := inProcessServer().Drain(ctx, &jobpb.DrainJobRequest{JobId: string(job.ID)}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("drained job: %v", err)
	}
	if st, _ := job.State(); st != jobpb.JobState_DRAINED {
		t.Fatalf("job state %v, want DRAINED (error: %v)", st, job.Err())
	}
	return job
}

func report(j *Job) CheckpointReport {
	return ReadCheckpointMetrics(j.Metrics.Results().GetCommitted())
}

func completed(j *Job) int64 { return report(j).Completed }

// TestCheckpointsOfAStreamingJob runs the same unbounded job without
// checkpoints, with aligned and with unaligned ones: every run has the
// same output (passert inside the job), the checkpointed runs complete at
// least three checkpoints whose folders verify and hold the group's state,
// and their statistics are in the job's metrics.
func TestCheckpointsOfAStreamingJob(t *testing.T) {
	plain := runCheckpointed(t, nil, 0)
	if r := report(plain); r.Completed != 0 || len(r.Checkpoints) != 0 {
		t.Errorf("a job without checkpoints reports checkpoints %+v", r)
	}
	for _, mode := range []string{"aligned", "unaligned"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			job := runCheckpointed(t, map[string]string{CheckpointIntervalOption: "50ms", CheckpointModeOption: mode,
				CheckpointDirOption: dir, CheckpointKeepOption: "10"}, 3)
			storage, err := checkpoint.OpenStorage(checkpoint.StorageOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			ids, err := storage.List()
			if err != nil || len(ids) < 3 {
				t.Fatalf("%d checkpoints visible (%v), want at least 3", len(ids), err)
			}
			withState := 0
			newestHasState := false
			for _, id := range ids {
				c, err := storage.Verify(id)
				if err != nil {
					t.Fatalf("checkpoint %d does not verify: %v", id, err)
				}
				m := c.Manifest
				if m.Job == "" || m.KeyGroups != 128 || m.Stats == nil || m.Stats.Subtasks == 0 || len(m.Subtasks) == 0 {
					t.Errorf("checkpoint %d: manifest %+v", id, m)
				}
				for _, sm := range m.Subtasks {
					var meta subtaskMeta
					if err := json.Unmarshal(sm.Meta, &meta); err != nil {
						t.Fatalf("checkpoint %d: subtask %d/%d meta %q: %v", id, sm.Node, sm.Subtask, sm.Meta, err)
					}
					if sm.Node > 0 && len(meta.Watermarks) == 0 {
						t.Errorf("checkpoint %d: subtask %d/%d recorded no watermark", id, sm.Node, sm.Subtask)
					}
				}
				for _, f := range m.Files {
					if strings.HasSuffix(f.Name, ".sst") {
						withState++
						newestHasState = newestHasState || id == ids[0]
						break
					}
				}
			}
			if withState == 0 {
				t.Errorf("no checkpoint holds the group's state")
			}
			r := report(job)
			if r.Completed < 3 || len(r.Checkpoints) == 0 {
				t.Fatalf("metrics report %d completed checkpoints, %d kept; want at least 3", r.Completed, len(r.Checkpoints))
			}
			// The newest visible checkpoint; the history may end with one
			// the drain ended before any subtask acknowledged it.
			var last CheckpointRow
			for _, row := range r.Checkpoints {
				if row.ID == uint64(ids[0]) {
					last = row
				}
			}
			// The newest may also come after the drain's last firing emptied
			// the store: then it holds no state, and writes no bytes.
			if last.ID != uint64(ids[0]) || last.Status != checkpoint.Completed || last.Subtasks == 0 || last.Trigger.IsZero() ||
				(newestHasState && last.Bytes == 0) || last.Duration <= 0 {
				t.Errorf("metrics of the last checkpoint: %+v; want checkpoint %d completed", last, ids[0])
			}
			if len(r.Subtasks) == 0 || r.Subtasks[0].Stage == "" {
				t.Errorf("no per-subtask statistics of the newest checkpoint: %+v", r.Subtasks)
			}
			if (mode == "unaligned") != (last.Unaligned > 0) {
				t.Errorf("%s checkpoint %d had %d unaligned subtasks", mode, last.ID, last.Unaligned)
			}
			t.Logf("%s: %d checkpoints kept; the last: %v", mode, len(ids), last)
		})
	}
}

func TestCheckpointMetricsRoundTrip(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	st := checkpoint.Stats{ID: 7, Trigger: t0, End: t0.Add(1500 * time.Millisecond), Status: checkpoint.Completed, Total: 2,
		Subtasks: []checkpoint.SubtaskStats{
			{Ack: checkpoint.Ack{Bytes: 100, Sync: 3 * time.Millisecond, Async: 40 * time.Millisecond}, StartDelay: 20 * time.Millisecond},
			{Ack: checkpoint.Ack{Bytes: 50, InFlightBytes: 10, Unaligned: true, Alignment: 9 * time.Millisecond}},
		}}
	failed := checkpoint.Stats{ID: 6, Trigger: t0.Add(-time.Second), End: t0, Status: checkpoint.Failed}
	stages := []string{"Impulse", "GroupByKey/Group"}
	st.Subtasks[0].Task = checkpoint.Task{Node: 1, Subtask: 3}
	r := ReadCheckpointMetrics(checkpointInfos([]checkpoint.Stats{failed, st}, true, 1, 1, func(n int) string { return stages[n] }))
	wantSubs := []SubtaskRow{
		{Checkpoint: 7, Stage: "GroupByKey/Group", Subtask: 3, StartDelay: 20 * time.Millisecond, Sync: 3 * time.Millisecond,
			Async: 40 * time.Millisecond, Bytes: 100},
		{Checkpoint: 7, Stage: "Impulse", Alignment: 9 * time.Millisecond, Bytes: 50, InFlightBytes: 10, Unaligned: true},
	}
	if !slices.Equal(r.Subtasks, wantSubs) {
		t.Errorf("subtasks\n got %+v\nwant %+v", r.Subtasks, wantSubs)
	}
	want := CheckpointRow{ID: 7, Status: checkpoint.Completed, Trigger: t0, Duration: 1500 * time.Millisecond,
		MaxStartDelay: 20 * time.Millisecond, MaxAlignment: 9 * time.Millisecond, MaxSync: 3 * time.Millisecond,
		MaxAsync: 40 * time.Millisecond, Bytes: 150, InFlightBytes: 10, Unaligned: 1, Subtasks: 2}
	if r.Completed != 1 || r.Failed != 1 || r.InProgress != 1 || len(r.Checkpoints) != 2 {
		t.Fatalf("report %+v", r)
	}
	if got := r.Checkpoints[0]; !got.Trigger.Equal(want.Trigger) {
		t.Errorf("trigger %v, want %v", got.Trigger, want.Trigger)
	} else if got.Trigger = want.Trigger; got != want {
		t.Errorf("row\n got %+v\nwant %+v", got, want)
	}
	if r.Checkpoints[1].ID != 6 || r.Checkpoints[1].Status != checkpoint.Failed {
		t.Errorf("second row %+v, want checkpoint 6 failed", r.Checkpoints[1])
	}
}
