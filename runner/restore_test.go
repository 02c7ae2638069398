package runner

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/joboptions"
	weirstate "github.com/weir-runner/weir/state"
)

// collected holds what collectFn saw, per run label: the output of a job
// as its sink committed it (one line per element).
var collected = struct {
	sync.Mutex
	runs map[string][]string
}{runs: map[string][]string{}}

type collectFn struct{ Run string }

func (f *collectFn) ProcessElement(et beam.EventTime, v int64) {
	collected.Lock()
	defer collected.Unlock()
	collected.runs[f.Run] = append(collected.runs[f.Run], fmt.Sprintf("%d:%d", int64(et), v))
}

func init() { register.DoFn2x0[beam.EventTime, int64](&collectFn{}) }

func takeCollected(run string) []string {
	collected.Lock()
	defer collected.Unlock()
	out := collected.runs[run]
	delete(collected.runs, run)
	return out
}

// restoreWindows is the job of the restore tests: six 10 s fixed windows,
// each fed by two element events and closed by a watermark event, summed
// per window (a lifted combine: a group-by-key holds the partial sums).
// Window w sums to 11*(w+1) + 100*(w+1).
const restoreWindows = 6

func restorePipeline(run string) *beam.Pipeline { return restorePipelineOf(run, false) }

// windowSumFn is the stateful variant of the sum: a bag per window and an
// event-time timer at its end, which lives in the runner's memory (the
// SDK stage's timer set) and only reaches a checkpoint through the stage's
// snapshot.
type windowSumFn struct {
	Vals  state.Bag[int64]
	Flush timers.EventTime
}

func (fn *windowSumFn) ProcessElement(w beam.Window, sp state.Provider, tp timers.Provider, _ string, v int64, _ func(int64)) {
	if err := fn.Vals.Add(sp, v); err != nil {
		panic(err)
	}
	fn.Flush.Set(tp, w.MaxTimestamp().ToTime())
}

func (fn *windowSumFn) OnTimer(_ context.Context, _ beam.EventTime, sp state.Provider, _ timers.Provider, _ string, _ timers.Context, emit func(int64)) {
	vs, _, err := fn.Vals.Read(sp)
	if err != nil {
		panic(err)
	}
	var sum int64
	for _, v := range vs {
		sum += v
	}
	emit(sum)
}

func keyAll(v int64) (string, int64) { return "k", v }

func init() {
	register.DoFn6x0[beam.Window, state.Provider, timers.Provider, string, int64, func(int64)](&windowSumFn{})
	register.Function1x2(keyAll)
}

// restorePipelineOf builds the job; stateful sums with windowSumFn
// instead of a combine.
func restorePipelineOf(run string, stateful bool) *beam.Pipeline {
	return restorePipelineWith(run, stateful, false)
}

// restorePipelineWith builds the job; expiry sums with expirySumFn, whose
// sum comes from the window's expiration (expiry_test.go: the caller
// names its family the OnWindowExpiration family).
func restorePipelineWith(run string, stateful, expiry bool) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	in := restoreInput(s)
	var sums beam.PCollection
	switch {
	case expiry:
		sums = beam.ParDo(s, &expirySumFn{Vals: state.MakeBagState[int64]("vals"), Expire: timers.InEventTime("expire")},
			beam.ParDo(s, keyAll, in))
	case stateful:
		sums = beam.ParDo(s, &windowSumFn{Vals: state.MakeBagState[int64]("vals"), Flush: timers.InEventTime("flush")},
			beam.ParDo(s, keyAll, in))
	default:
		sums = stats.Sum(s, in)
	}
	beam.ParDo0(s, &collectFn{Run: run}, sums)
	return p
}

// restoreInput is the restore tests' input: the TestStream of the six
// windows, in 10 s fixed windows. Build it first: the Go SDK names the
// TestStream's coder by its position in the pipeline.
func restoreInput(s beam.Scope) beam.PCollection {
	c := teststream.NewConfig()
	for w := range int64(restoreWindows) {
		base := w * 10000
		c.AddElements(base+1000, w+1, 10*(w+1))
		c.AddElements(base+2000, 100*(w+1))
		c.AdvanceWatermark(base + 10000)
	}
	return beam.WindowInto(s, window.NewFixedWindows(10*time.Second), teststream.Create(s, c))
}

// eventOf returns the index of a window's events: 0 and 1 add elements, 2
// closes it.
func eventOf(w, k int) int { return 3*w + k }

// runRestoreJob runs the restore test job under a job name with the given
// options; before, if set, is the TestStream's hook. It returns the job's
// error and its output.
func runRestoreJob(t *testing.T, name, run string, opts map[string]string,
	before func(ctx context.Context, i int, poll func() error) error) ([]string, *Job, error) {
	t.Helper()
	return runRestoreJobOf(t, restorePipeline(run), name, run, opts, before)
}

func runRestoreJobOf(t *testing.T, p *beam.Pipeline, name, run string, opts map[string]string,
	before func(ctx context.Context, i int, poll func() error) error) ([]string, *Job, error) {
	t.Helper()
	if err := flag.Set("job_name", name); err != nil {
		t.Fatal(err)
	}
	defer flag.Set("job_name", "")
	for k, v := range opts {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	if _, ok := opts[joboptions.RestartAttempts]; !ok && opts[CheckpointIntervalOption] != "" {
		// A simulated crash ends the run as a real one ends the process:
		// these tests restore in the next run, not by an in-process restart.
		beam.PipelineOptions.Set(joboptions.RestartAttempts, "0")
		defer beam.PipelineOptions.Set(joboptions.RestartAttempts, "")
	}
	var mu sync.Mutex
	var job *Job
	testHookSource = func(j *Job, src executor.Source) {
		ts, ok := src.(*executor.TestStream)
		if !ok {
			return
		}
		mu.Lock()
		job = j
		mu.Unlock()
		streamJob.Store(j)
		ts.Before = before
	}
	defer func() { testHookSource = nil }()
	beam.Init()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := Execute(ctx, p)
	mu.Lock()
	defer mu.Unlock()
	return takeCollected(run), job, err
}

var errCrash = errors.New("simulated crash")

// crashAt returns a TestStream hook that holds the replay before event
// stop until n more checkpoints completed in dir (from the second on they
// were triggered while the replay waited, so they record the replay at
// stop), then fails the job as a crash would: nothing is drained or
// flushed.
//
// It opens the storage before the job runs: opening removes unfinished
// checkpoint folders, which would fail the job's checkpoint in flight.
func crashAt(t *testing.T, dir string, stop, n int) func(context.Context, int, func() error) error {
	return crashAfter(t, dir, stop, n, nil)
}

// crashAfter is crashAt that first waits, polling, until ready says so:
// until what the job emitted before event stop has reached its sink, say,
// so that nothing of it is still in flight when the checkpoints it counts
// are taken (an unaligned barrier would overtake it, and the restored job
// would rightly emit it again).
func crashAfter(t *testing.T, dir string, stop, n int, ready func() bool) func(context.Context, int, func() error) error {
	storage, err := checkpoint.OpenStorage(checkpoint.StorageOptions{Dir: dir, Keep: 100})
	if err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context, i int, poll func() error) error {
		if i != stop {
			return nil
		}
		for ready != nil && !ready() {
			if err := poll(); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
		ids, _ := storage.List()
		var first checkpoint.ID
		if len(ids) > 0 {
			first = ids[0]
		}
		for {
			if err := poll(); err != nil {
				return err
			}
			ids, err := storage.List()
			if err != nil {
				return err
			}
			if len(ids) > 0 && ids[0] >= first+checkpoint.ID(n) {
				return errCrash
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
}

// windowSums reads the collected lines into window end → sums seen.
func windowSums(lines []string) map[string][]string {
	out := map[string][]string{}
	for _, l := range lines {
		ts, sum, _ := strings.Cut(l, ":")
		out[ts] = append(out[ts], sum)
	}
	return out
}

// TestRestoreAfterCrash crashes a checkpointed TestStream job in the
// middle of window 3 (one of its two element events is in the group's
// state), starts it again under the same name and checkpoint folder, and
// compares with one uninterrupted run: every window's sum is the same
// (state restored, and no element counted twice: the restored TestStream
// does not send again what the checkpoint holds), every window is in the
// union of the two runs' output, and the restored run does not emit the
// windows the checkpoint had already closed (it did not start over).
func TestRestoreAfterCrash(t *testing.T) {
	want, _, err := runRestoreJob(t, "restore-plain", "plain", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantSums := windowSums(want)
	if len(wantSums) != restoreWindows {
		t.Fatalf("the uninterrupted run emitted %v, want %d windows", want, restoreWindows)
	}
	for _, tc := range []struct {
		mode     string
		stateful bool
		// expiry: the stateful sum comes from the window's expiration
		// (OnWindowExpiration), a timer only the runner sets.
		expiry bool
		// stable: the stateful sum requires stable input, so its stage's
		// operator is wrapped (twophase.StableInput), and its timer
		// reaches checkpoints only through the wrapper's snapshot.
		stable bool
	}{{"aligned", false, false, false}, {"unaligned", false, false, false}, {"aligned", true, false, false},
		{"aligned", true, true, false}, {"aligned", true, false, true}} {
		mode := tc.mode
		switch {
		case tc.stable:
			mode = "stable-" + mode
		case tc.expiry:
			mode = "expiry-" + mode
		case tc.stateful:
			mode = "stateful-" + mode
		}
		run := func(t *testing.T, name, run string, opts map[string]string,
			before func(context.Context, int, func() error) error) ([]string, *Job, error) {
			if tc.expiry {
				testHookPipeline = withWindowExpiration(t, "expirySumFn", "expire")
				defer func() { testHookPipeline = nil }()
			}
			if tc.stable {
				testHookPipeline = requireStableInputOf(t, "windowSumFn")
				defer func() { testHookPipeline = nil }()
			}
			return runRestoreJobOf(t, restorePipelineWith(run, tc.stateful, tc.expiry), name, run, opts, before)
		}
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			name := "restore-crash-" + mode
			opts := map[string]string{CheckpointIntervalOption: "5ms", CheckpointDirOption: dir, CheckpointModeOption: tc.mode,
				CheckpointKeepOption: "10"}
			// Crash before window 3's second element event or, stateful,
			// before its watermark: then only the restored timer (or
			// expiration) fires it.
			stop := eventOf(3, 1)
			if tc.stateful {
				stop = eventOf(3, 2)
			}
			// Windows 0 to 2 fire before event stop: wait until they reach
			// the sink, so the checkpoints after are of a job that fired them.
			fired := func() bool { return len(peekCollected(mode+"-1")) >= 3 }
			first, _, err := run(t, name, mode+"-1", opts, crashAfter(t, dir, stop, 2, fired))
			if err == nil || !strings.Contains(err.Error(), errCrash.Error()) {
				t.Fatalf("the first run ended with %v, want the simulated crash", err)
			}
			second, job, err := run(t, name, mode+"-2", opts, nil)
			if err != nil {
				t.Fatalf("restored run: %v", err)
			}
			if !hasMessage(job, "restored from checkpoint") {
				t.Errorf("the second run did not report a restore")
			}
			got := windowSums(append(slices.Clone(first), second...))
			for ts, sums := range got {
				for _, s := range sums {
					if w := wantSums[ts]; len(w) != 1 || w[0] != s {
						t.Errorf("window ending %s summed to %s, the uninterrupted run %v", ts, s, w)
					}
				}
			}
			if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(wantSums))) {
				t.Errorf("windows emitted %v, want %v", got, wantSums)
			}
			// Windows 0..2 closed before the replay reached window 3's
			// second event, so the restored checkpoint had fired them.
			for w := range 3 {
				ts := fmt.Sprint(int64(w)*10000 + 9999)
				if s := windowSums(second)[ts]; len(s) > 0 {
					t.Errorf("the restored run emitted window %d (%v) again: it started over", w, s)
				}
			}
			t.Logf("first run %v, restored run %v", first, second)

			// The restored run ended by itself: the next run starts over.
			third, job, err := run(t, name, mode+"-3", opts, nil)
			if err != nil {
				t.Fatalf("third run: %v", err)
			}
			if !hasMessage(job, "starting over") || hasMessage(job, "restored from") {
				t.Errorf("the run after a finished one did not start over")
			}
			if got := windowSums(third); !maps.EqualFunc(got, wantSums, slices.Equal) {
				t.Errorf("the run after a finished one emitted %v, want %v", got, wantSums)
			}
		})
	}
}

func hasMessage(j *Job, substr string) bool {
	if j == nil {
		return false
	}
	msgs, _, _ := j.Updates(0)
	for _, m := range msgs {
		if strings.Contains(m.GetMessageText(), substr) {
			return true
		}
	}
	return false
}

// TestRestoreSkipsCorruptCheckpoint crashes the job as
// TestRestoreAfterCrash does, damages one file of the newest checkpoint,
// and starts the job again: it warns of the corrupt checkpoint by name,
// restores from the one before, and its output is still exact.
func TestRestoreSkipsCorruptCheckpoint(t *testing.T) {
	dir := t.TempDir()
	name := "restore-corrupt"
	opts := map[string]string{CheckpointIntervalOption: "5ms", CheckpointDirOption: dir, CheckpointKeepOption: "10"}
	first, _, err := runRestoreJob(t, name, "corrupt-1", opts, crashAt(t, dir, eventOf(3, 1), 3))
	if err == nil || !strings.Contains(err.Error(), errCrash.Error()) {
		t.Fatalf("the first run ended with %v, want the simulated crash", err)
	}
	storage, err := checkpoint.OpenStorage(checkpoint.StorageOptions{Dir: dir, Keep: 100})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := storage.List()
	if err != nil || len(ids) < 2 {
		t.Fatalf("checkpoints %v (%v), want at least two", ids, err)
	}
	c, err := storage.Verify(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	damaged := checkpoint.ManifestName
	for _, f := range c.Manifest.Files {
		if strings.HasSuffix(f.Name, ".sst") {
			damaged = f.Name
		}
	}
	path := c.Path(storage.FS(), damaged)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	// Another graph under the same name is refused, with what differs.
	other := restorePipeline("corrupt-other")
	beam.ParDo0(other.Root(), &collectFn{Run: "corrupt-other"}, beam.Create(other.Root(), int64(1)))
	if _, _, err := runRestoreJobOf(t, other, name, "corrupt-other", opts, nil); err == nil ||
		!strings.Contains(err.Error(), "another graph") || !strings.Contains(err.Error(), "nodes") {
		t.Errorf("restoring another graph: %v, want a refusal listing the differences", err)
	} else {
		t.Logf("another graph: %v", err)
	}
	takeCollected("corrupt-other")

	second, job, err := runRestoreJob(t, name, "corrupt-2", opts, nil)
	if err != nil {
		t.Fatalf("restored run: %v", err)
	}
	if !hasMessage(job, fmt.Sprintf("skipped corrupt checkpoint %d", ids[0])) || !hasMessage(job, damaged) {
		t.Errorf("no warning names corrupt checkpoint %d and its file %s", ids[0], damaged)
	}
	if !hasMessage(job, fmt.Sprintf("restored from checkpoint %d ", ids[1])) {
		t.Errorf("the job did not restore from checkpoint %d, the one before the corrupt one", ids[1])
	}
	want := map[string][]string{}
	for w := range int64(restoreWindows) {
		want[fmt.Sprint(w*10000+9999)] = []string{fmt.Sprint(111 * (w + 1))}
	}
	got := windowSums(append(slices.Clone(first), second...))
	for ts, sums := range got {
		for _, s := range sums {
			if w := want[ts]; w[0] != s {
				t.Errorf("window ending %s summed to %s, want %s", ts, s, w[0])
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("windows emitted %v, want %v", got, want)
	}
	t.Logf("first run %v, restored run %v", first, second)
}

// TestRestoreOptions: the default checkpoint folder is keyed by the job's
// name, so a resubmission finds it; restore is on unless turned off.
func TestRestoreOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		job     *Job
		opts    map[string]any
		dir     string
		restore bool
		err     string
	}{
		{"by name", &Job{ID: "clicks-7", Name: "clicks"}, nil, "/state/jobs/clicks/checkpoints", true, ""},
		{"unsafe name", &Job{ID: "x-1", Name: "a/b c"}, nil, "/state/jobs/a_b_c/checkpoints", true, ""},
		{"no name: the id", &Job{ID: "job-3"}, nil, "/state/jobs/job-3/checkpoints", true, ""},
		{"named folder", &Job{ID: "c-1", Name: "c"}, map[string]any{CheckpointDirOption: "/ckpt"}, "/ckpt", true, ""},
		{"restore off", &Job{ID: "c-1", Name: "c"}, map[string]any{RestoreOption: "false"}, "/state/jobs/c/checkpoints", false, ""},
		{"restore on", &Job{ID: "c-1", Name: "c"}, map[string]any{RestoreOption: "true"}, "/state/jobs/c/checkpoints", true, ""},
		{"bad restore", &Job{ID: "c-1", Name: "c"}, map[string]any{RestoreOption: "maybe"}, "", false, RestoreOption},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := map[string]any{CheckpointIntervalOption: "1s"}
			maps.Copy(opts, tc.opts)
			st, err := structpb.NewStruct(opts)
			if err != nil {
				t.Fatal(err)
			}
			tc.job.Options = st
			c, err := checkpointOptions(tc.job, "/state")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.dir != tc.dir || c.restore != tc.restore {
				t.Errorf("folder %s, restore %v; want %s, %v", c.dir, c.restore, tc.dir, tc.restore)
			}
		})
	}
}

// TestReadRestorePoint writes a checkpoint by hand and reads it back as a
// restore does: each subtask's state, watermarks and in-flight data, the
// state files to import, and subtasks with no entry as ended.
func TestReadRestorePoint(t *testing.T) {
	dir := t.TempDir()
	graph := []checkpoint.GraphNode{{Stage: "s1", Name: "src", Parallelism: 1}, {Stage: "s2", Name: "gbk", Parallelism: 2}}
	storage, err := checkpoint.OpenStorage(checkpoint.StorageOptions{Dir: dir, Job: "j", Graph: graph})
	if err != nil {
		t.Fatal(err)
	}
	w, err := storage.Begin(4)
	if err != nil {
		t.Fatal(err)
	}
	f, err := w.Create("n1-s1.sst")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("sst"))
	f.Close()
	if err := w.WriteFile("n1-s1.inflight", []byte{1, 0, 1, 1, 'x'}); err != nil {
		t.Fatal(err)
	}
	meta := func(m subtaskMeta) []byte { b, _ := json.Marshal(m); return b }
	marks := []executor.ChannelMark{{Watermark: 42, ProcessingTime: mtime.MinTimestamp,
		InFlightWatermark: 50, InFlightProcessingTime: 7, Idle: true, InFlightActive: true}, {Watermark: mtime.MaxTimestamp, ProcessingTime: 3,
		InFlightWatermark: mtime.MinTimestamp, InFlightProcessingTime: mtime.MinTimestamp, InFlightIdle: true}}
	w.SetSubtask(checkpoint.Task{Node: 0, Subtask: 0}, meta(subtaskMeta{State: []byte(`{"fired":true}`)}))
	w.SetSubtask(checkpoint.Task{Node: 1, Subtask: 1}, meta(subtaskMeta{StateFile: "n1-s1.sst", InFlightFile: "n1-s1.inflight",
		Unaligned: true, Watermarks: []int64{42}, State: []byte(`{"seq":3}`),
		Channels: []channelMeta{channelMetaOf(marks[0]), channelMetaOf(marks[1])}}))
	if err := w.Commit(time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	c, _, err := storage.Latest()
	if err != nil {
		t.Fatal(err)
	}
	rp, byTask, err := readRestorePoint(storage.FS(), c)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range byTask {
		files = append(files, f)
	}
	if len(files) != 1 || !strings.HasSuffix(files[0], "chk-4/n1-s1.sst") {
		t.Errorf("state files %v", files)
	}
	if rs := rp.subtask(0, 0); rs.Finished || string(rs.State) != `{"fired":true}` {
		t.Errorf("source: %+v", rs)
	}
	if rs := rp.subtask(1, 0); !rs.Finished {
		t.Errorf("a subtask without an entry: %+v, want it ended", rs)
	}
	rs := rp.subtask(1, 1)
	var batches []string
	if err := executor.DecodeInFlight(rs.InFlight, func(ch, port int, elems [][]byte) error {
		batches = append(batches, fmt.Sprintf("%d/%d:%s", ch, port, elems[0]))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if rs.Finished || string(rs.State) != `{"seq":3}` || len(rs.Watermarks) != 1 || rs.Watermarks[0] != 42 ||
		fmt.Sprint(batches) != "[1/0:x]" || !slices.Equal(rs.Channels, marks) {
		t.Errorf("operator: %+v, in flight %v; want channels %v", rs, batches, marks)
	}
}

// TestClaimRoot: two jobs of this process never share a checkpoint root.
func TestClaimRoot(t *testing.T) {
	dir := t.TempDir()
	fs := vfs.Default
	release, err := claimRoot(fs, dir, "clicks", "clicks-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := claimRoot(fs, dir+"/.", "clicks", "clicks-2"); err == nil || !strings.Contains(err.Error(), "in use by job clicks-1") {
		t.Fatalf("a second claim: %v, want it refused naming the first job", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	release2, err := claimRoot(fs, dir, "clicks", "clicks-2")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	_ = release() // a stale release leaves the new claim alone
	if _, err := claimRoot(fs, dir, "clicks", "clicks-3"); err == nil {
		t.Error("a stale release freed the root of another job")
	}
	if err := release2(); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreDecisions drives restoreJob over roots built by hand: what it
// restores, when it starts over, and when it refuses.
func TestRestoreDecisions(t *testing.T) {
	graph := []checkpoint.GraphNode{{Stage: "s1", Name: "src", Parallelism: 1}}
	commit := func(t *testing.T, s *checkpoint.Storage, id checkpoint.ID) {
		w, err := s.Begin(id)
		if err != nil {
			t.Fatal(err)
		}
		w.SetSubtask(checkpoint.Task{}, []byte(`{"state":"e30="}`))
		if err := w.Commit(time.Now(), nil); err != nil {
			t.Fatal(err)
		}
	}
	corrupt := func(t *testing.T, dir string, id checkpoint.ID) {
		if err := os.WriteFile(fmt.Sprintf("%s/chk-%d/%s", dir, id, checkpoint.ManifestName), []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		build   func(t *testing.T, dir string, s *checkpoint.Storage)
		off     bool
		want    checkpoint.ID // 0: a fresh start
		err     string
		message string
	}{
		{"empty root", func(*testing.T, string, *checkpoint.Storage) {}, false, 0, "", ""},
		{"newest", func(t *testing.T, _ string, s *checkpoint.Storage) { commit(t, s, 1); commit(t, s, 2) }, false, 2, "", "restored from checkpoint 2"},
		{"restore off", func(t *testing.T, _ string, s *checkpoint.Storage) { commit(t, s, 1) }, true, 0, "", ""},
		{"newest corrupt", func(t *testing.T, dir string, s *checkpoint.Storage) {
			commit(t, s, 1)
			commit(t, s, 2)
			corrupt(t, dir, 2)
		}, false, 1, "", "skipped corrupt checkpoint 2"},
		{"all corrupt", func(t *testing.T, dir string, s *checkpoint.Storage) { commit(t, s, 1); corrupt(t, dir, 1) },
			false, 0, "none of the 1 checkpoints", "skipped corrupt checkpoint 1"},
		{"finished", func(t *testing.T, _ string, s *checkpoint.Storage) {
			commit(t, s, 1)
			if err := s.MarkFinished(time.Now()); err != nil {
				t.Fatal(err)
			}
		}, false, 0, "", "starting over"},
		{"crashed after a finished run", func(t *testing.T, _ string, s *checkpoint.Storage) {
			commit(t, s, 1)
			if err := s.MarkFinished(time.Now()); err != nil {
				t.Fatal(err)
			}
			commit(t, s, 2)
		}, false, 2, "", "restored from checkpoint 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := checkpoint.OpenStorage(checkpoint.StorageOptions{Dir: dir, Keep: 10, Graph: graph})
			if err != nil {
				t.Fatal(err)
			}
			tc.build(t, dir, s)
			j := NewJob("j-1", "j", nil, nil)
			store := memJobStore(t)
			rp, err := restoreJob(context.Background(), j, &checkpointConfig{dir: dir, restore: !tc.off, graph: graph}, store)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			var got checkpoint.ID
			if rp != nil {
				got = rp.id
			}
			if got != tc.want {
				t.Errorf("restored checkpoint %d, want %d", got, tc.want)
			}
			if tc.message != "" && !hasMessage(j, tc.message) {
				msgs, _, _ := j.Updates(0)
				t.Errorf("no message %q in %v", tc.message, msgs)
			}
		})
	}
}

func memJobStore(t *testing.T) *weirstate.Store {
	t.Helper()
	s, err := weirstate.Open(weirstate.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func addSide(v int64, side []int64, emit func(int64)) {
	for _, s := range side {
		v += s
	}
	emit(v)
}

func init() { register.Function3x0(addSide) }

// TestRestoreKeepsSideInputs crashes a job whose every element reads a
// side input made once, by an Impulse, at the start, and restores it: the
// Impulse does not fire again, so the restored job answers side-input
// reads only if the checkpoint carried the side input's contents. Each
// window's sum then includes the side value (1000) once per element.
func TestRestoreKeepsSideInputs(t *testing.T) {
	pipeline := func(run string) *beam.Pipeline {
		p, s := beam.NewPipelineWithRoot()
		in := restoreInput(s)
		side := beam.Create(s, int64(1000))
		sums := stats.Sum(s, beam.ParDo(s, addSide, in, beam.SideInput{Input: side}))
		beam.ParDo0(s, &collectFn{Run: run}, sums)
		return p
	}
	dir := t.TempDir()
	name := "restore-side"
	opts := map[string]string{CheckpointIntervalOption: "5ms", CheckpointDirOption: dir, CheckpointKeepOption: "10"}
	first, _, err := runRestoreJobOf(t, pipeline("side-1"), name, "side-1", opts, crashAt(t, dir, eventOf(3, 1), 2))
	if err == nil || !strings.Contains(err.Error(), errCrash.Error()) {
		t.Fatalf("the first run ended with %v, want the simulated crash", err)
	}
	second, job, err := runRestoreJobOf(t, pipeline("side-2"), name, "side-2", opts, nil)
	if err != nil {
		t.Fatalf("restored run: %v", err)
	}
	if !hasMessage(job, "restored from checkpoint") {
		t.Errorf("the second run did not report a restore")
	}
	got := windowSums(slices.Concat(first, second))
	for w := range restoreWindows {
		ts, want := fmt.Sprint(w*10000+9999), fmt.Sprint(111*(w+1)+3*1000)
		if s := got[ts]; len(s) != 1 || s[0] != want {
			t.Errorf("window %d summed to %v over both runs, want [%s] once", w, s, want)
		}
	}
	t.Logf("first run %v, restored run %v", first, second)
}
