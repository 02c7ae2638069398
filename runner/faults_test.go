package runner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/state"
)

// Faults of the disk under a running job (issue 19): the state store's
// disk fills during a shuffle, the checkpoint disk fills during a
// checkpoint. Each is injected through the executor's file systems
// (LocalExecutor.Store.FS, LocalExecutor.CheckpointFS).

// diskFull is an errorfs injector: while on, what takes space (creating,
// writing, syncing, renaming, making folders) fails with ENOSPC as on a
// full disk; reading and removing work.
type diskFull struct {
	on   atomic.Bool
	hits atomic.Int64
	// only, if set, limits the fault to paths that contain it.
	only string
}

func (d *diskFull) String() string { return "disk full" }

func (d *diskFull) MaybeError(op errorfs.Op) error {
	if !d.on.Load() || !strings.Contains(op.Path, d.only) {
		return nil
	}
	switch op.Kind {
	case errorfs.OpCreate, errorfs.OpLink, errorfs.OpRename, errorfs.OpReuseForWrite, errorfs.OpMkdirAll,
		errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync, errorfs.OpFileSyncData,
		errorfs.OpFileSyncTo, errorfs.OpFileFlush, errorfs.OpFilePreallocate:
		d.hits.Add(1)
		return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
	}
	return nil
}

// useServer points the SDK at a job server running e until the test ends.
func useServer(t *testing.T, e *LocalExecutor) *Server {
	t.Helper()
	s := NewServer(e, ServerOptions{StagingRoot: filepath.Join(os.TempDir(), "weir-staging")})
	if err := s.Start("localhost:0"); err != nil {
		t.Fatal(err)
	}
	endpoint := *jobopts.Endpoint
	*jobopts.Endpoint = s.Endpoint()
	t.Cleanup(func() {
		*jobopts.Endpoint = endpoint
		s.GracefulStop()
	})
	return s
}

// The shuffle test's job: bigEvents TestStream events of bigPerEvent
// values of about 4 KB, two events per 10 s window, grouped by key with
// every window firing at the end, so the group-by-key's store holds all
// of it (MBs, past a 1 MiB memtable: flushes write files).
const (
	bigEvents   = 24
	bigPerEvent = 50
	bigKeys     = 4
)

func bigValue(i int) string {
	head := fmt.Sprintf("k%d:%d:", i%bigKeys, i)
	return head + strings.Repeat("x", 4000-len(head))
}

func bigInput(s beam.Scope) beam.PCollection {
	c := teststream.NewConfig()
	for e := range bigEvents {
		var vs []any
		for j := range bigPerEvent {
			vs = append(vs, bigValue(e*bigPerEvent+j))
		}
		c.AddElements(int64(e)*5000+1, vs...)
	}
	c.AdvanceWatermarkToInfinity()
	return beam.WindowInto(s, window.NewFixedWindows(10*time.Second), teststream.Create(s, c))
}

func keyOfBig(v string) (string, string) {
	k, _, _ := strings.Cut(v, ":")
	return k, v
}

// summarizeBig is a group's line: window start, key, values, sum of their
// indexes.
func summarizeBig(w beam.Window, k string, vs func(*string) bool) string {
	n, sum := 0, 0
	var v string
	for vs(&v) {
		var i int
		_, _ = fmt.Sscanf(strings.SplitN(v, ":", 3)[1], "%d", &i)
		n++
		sum += i
	}
	return fmt.Sprintf("%d|%s|%d|%d", w.(window.IntervalWindow).Start.Milliseconds(), k, n, sum)
}

type lineCollectFn struct{ Run string }

func (f *lineCollectFn) ProcessElement(v string) {
	collected.Lock()
	defer collected.Unlock()
	collected.runs[f.Run] = append(collected.runs[f.Run], v)
}

func init() {
	register.Function1x2(keyOfBig)
	register.Function3x1(summarizeBig)
	register.DoFn1x0[string](&lineCollectFn{})
}

func bigPipeline(run string) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	in := bigInput(s)
	groups := beam.GroupByKey(s, beam.ParDo(s, keyOfBig, in))
	beam.ParDo0(s, &lineCollectFn{Run: run}, beam.ParDo(s, summarizeBig, groups))
	return p
}

func bigExpected() []string {
	type wk struct {
		start int64
		key   string
	}
	n, sum := map[wk]int{}, map[wk]int{}
	for e := range bigEvents {
		for j := range bigPerEvent {
			i := e*bigPerEvent + j
			k := wk{int64(e) * 5000 / 10000 * 10000, fmt.Sprintf("k%d", i%bigKeys)}
			n[k]++
			sum[k] += i
		}
	}
	var out []string
	for k := range n {
		out = append(out, fmt.Sprintf("%d|%s|%d|%d", k.start, k.key, n[k], sum[k]))
	}
	slices.Sort(out)
	return out
}

// armAfter returns a TestStream hook that, before event stop, waits until
// two more checkpoints completed in dir (the second was triggered while
// the replay waited, so it holds everything before stop), then calls arm.
func armAfter(t *testing.T, dir string, stop int, arm func(ctx context.Context, poll func() error) error) func(context.Context, int, func() error) error {
	storage, err := checkpoint.OpenStorage(checkpoint.StorageOptions{Dir: dir, Keep: 100})
	if err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context, i int, poll func() error) error {
		if i != stop {
			return nil
		}
		var first checkpoint.ID
		if ids, _ := storage.List(); len(ids) > 0 {
			first = ids[0]
		}
		if err := pollUntil(ctx, poll, func() bool {
			ids, _ := storage.List()
			return len(ids) > 0 && ids[0] >= first+2
		}); err != nil {
			return err
		}
		return arm(ctx, poll)
	}
}

// pollUntil polls the job until cond holds.
func pollUntil(ctx context.Context, poll func() error, cond func() bool) error {
	for !cond() {
		if err := poll(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// TestFullDiskDuringShuffle fills the state store's disk while a
// group-by-key buffers megabytes: the job fails with an error that names
// the stage, the store's folder and the full disk (no panic, no hang);
// started again with space, it resumes from its last checkpoint and its
// output is exactly that of a run without the fault. In "manifest" the
// disk fills between a flush's table and the MANIFEST edit that records
// it: Pebble then calls its logger's Fatalf, whose default exits the
// process (this test's, or a server's with all its jobs); the store's
// logger fails the store, and so the job, instead.
func TestFullDiskDuringShuffle(t *testing.T) {
	t.Run("every write", func(t *testing.T) { fullDiskDuringShuffle(t, &diskFull{}) })
	t.Run("manifest", func(t *testing.T) { fullDiskDuringShuffle(t, &diskFull{only: "MANIFEST"}) })
}

func fullDiskDuringShuffle(t *testing.T, full *diskFull) {
	useServer(t, &LocalExecutor{Parallelism: 2, StateDir: t.TempDir(),
		Store: state.Options{FS: errorfs.Wrap(vfs.Default, full), MemTableSize: 1 << 20}})
	dir := t.TempDir()
	opts := map[string]string{CheckpointIntervalOption: "20ms", CheckpointDirOption: dir}

	// Hold the replay two thirds in until a flush has met the full disk:
	// data still in memory when the input ends could be grouped and
	// emitted without the disk, and the job end well.
	var store atomic.Pointer[state.Store]
	testHookStore = func(s *state.Store) { store.Store(s) }
	defer func() { testHookStore = nil }()
	arm := armAfter(t, dir, bigEvents/3, func(context.Context, func() error) error { full.on.Store(true); return nil })
	before := func(ctx context.Context, i int, poll func() error) error {
		if i == 2*bigEvents/3 {
			return pollUntil(ctx, poll, func() bool { return store.Load().Err() != nil })
		}
		return arm(ctx, i, poll)
	}
	first, _, err := runRestoreJobOf(t, bigPipeline("shuffle-1"), "full-shuffle", "shuffle-1", opts, before)
	full.on.Store(false)
	if err == nil {
		t.Fatalf("the store's disk was full (%d writes refused), yet the job succeeded", full.hits.Load())
	}
	t.Logf("the job failed: %v", err)
	// The stage and subtask (the Go SDK names its group-by-key CoGBK), the
	// store's folder, the disk's error.
	for _, s := range []string{"(CoGBK)[", "the store in /", "weir-state-", "no space left on device"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the job's error does not say %q", s)
		}
	}
	second, job, err := runRestoreJobOf(t, bigPipeline("shuffle-2"), "full-shuffle", "shuffle-2", opts, nil)
	if err != nil {
		t.Fatalf("the run after the disk was freed: %v", err)
	}
	if !hasMessage(job, "restored from checkpoint") {
		t.Error("the run after the disk was freed did not restore")
	}
	got := append(slices.Clone(first), second...)
	slices.Sort(got)
	if want := bigExpected(); !slices.Equal(got, want) {
		t.Errorf("output %v\nwant %v", got, want)
	}
}

// TestFullDiskDuringCheckpoint fills the checkpoint disk of a running job.
// Tolerated (weir_checkpoint_tolerable_failures), the checkpoints fail
// (counted, and each a warning naming the disk's error) while the job runs
// on, and the next one after space returns completes. By default the
// first failure fails the job with that error, and the job started again
// resumes from the last checkpoint that completed, with exact output.
// Either way no checkpoint is left half-written.
func TestFullDiskDuringCheckpoint(t *testing.T) {
	want, _, err := runRestoreJob(t, "ckfull-plain", "ckfull-plain", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantSums := windowSums(want)

	t.Run("tolerated", func(t *testing.T) {
		full := &diskFull{}
		useServer(t, &LocalExecutor{StateDir: t.TempDir(), CheckpointFS: errorfs.Wrap(vfs.Default, full)})
		dir := t.TempDir()
		opts := map[string]string{CheckpointIntervalOption: "5ms", CheckpointDirOption: dir,
			CheckpointTolerableFailuresOption: "1000"}
		var failedWhileFull, completedAfter int64
		arm := func(ctx context.Context, poll func() error) error {
			j := streamJob.Load()
			before := report(j)
			full.on.Store(true)
			if err := pollUntil(ctx, poll, func() bool { return report(j).Failed >= before.Failed+3 }); err != nil {
				return err
			}
			full.on.Store(false)
			during := report(j)
			failedWhileFull = during.Failed - before.Failed
			if err := pollUntil(ctx, poll, func() bool { return report(j).Completed > during.Completed }); err != nil {
				return err
			}
			completedAfter = report(j).Completed - during.Completed
			return nil
		}
		got, job, err := runRestoreJob(t, "ckfull-tolerated", "ckfull-tolerated", opts, armAfter(t, dir, eventOf(3, 1), arm))
		if err != nil {
			t.Fatalf("the job failed: %v", err)
		}
		t.Logf("%d checkpoints failed while the disk was full, %d completed after", failedWhileFull, completedAfter)
		if !maps.EqualFunc(windowSums(got), wantSums, slices.Equal) {
			t.Errorf("output %v, want %v", windowSums(got), wantSums)
		}
		if !hasMessage(job, "failed") || !hasMessage(job, "no space left on device") {
			t.Error("no warning of a checkpoint failed on the full disk")
		}
		checkRootWhole(t, dir)
	})

	t.Run("fails the job", func(t *testing.T) {
		full := &diskFull{}
		useServer(t, &LocalExecutor{StateDir: t.TempDir(), CheckpointFS: errorfs.Wrap(vfs.Default, full)})
		dir := t.TempDir()
		opts := map[string]string{CheckpointIntervalOption: "5ms", CheckpointDirOption: dir}
		var last checkpoint.ID
		arm := func(ctx context.Context, poll func() error) error {
			full.on.Store(true)
			// Nothing completes now (publishing one writes); the newest
			// complete checkpoint is the one a restart must take.
			last = newestComplete(t, dir)
			return pollUntil(ctx, poll, func() bool { return false })
		}
		first, _, err := runRestoreJob(t, "ckfull-fail", "ckfull-fail-1", opts, armAfter(t, dir, eventOf(3, 1), arm))
		full.on.Store(false)
		if err == nil || !strings.Contains(err.Error(), "too many consecutive checkpoint failures") ||
			!strings.Contains(err.Error(), "no space left on device") {
			t.Fatalf("the first run ended with %v, want too many checkpoint failures on a full disk", err)
		}
		t.Logf("the job failed: %v", err)
		checkRootWhole(t, dir)
		second, job, err := runRestoreJob(t, "ckfull-fail", "ckfull-fail-2", opts, nil)
		if err != nil {
			t.Fatalf("the run after the disk was freed: %v", err)
		}
		if !hasMessage(job, fmt.Sprintf("restored from checkpoint %d (", last)) {
			t.Errorf("the second run did not restore checkpoint %d, the last complete before the disk filled", last)
		}
		got := windowSums(append(slices.Clone(first), second...))
		if !maps.EqualFunc(got, wantSums, slices.Equal) {
			t.Errorf("output of both runs %v, want %v", got, wantSums)
		}
	})
}

// newestComplete returns the newest complete checkpoint of a root without
// opening its storage (which removes unfinished ones).
func newestComplete(t *testing.T, dir string) checkpoint.ID {
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Error(err)
		return 0
	}
	var newest checkpoint.ID
	for _, n := range names {
		var id checkpoint.ID
		if _, err := fmt.Sscanf(n.Name(), "chk-%d", &id); err == nil && !strings.HasSuffix(n.Name(), ".tmp") {
			newest = max(newest, id)
		}
	}
	return newest
}

// checkRootWhole checks that a root holds no unfinished checkpoint and
// that every checkpoint in it verifies.
func checkRootWhole(t *testing.T, dir string) {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n.Name(), ".tmp") {
			t.Errorf("%s left in the root", n.Name())
		}
	}
	storage, err := checkpoint.OpenStorage(checkpoint.StorageOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := storage.List()
	if err != nil || len(ids) == 0 {
		t.Fatalf("root lists %v, %v", ids, err)
	}
	for _, id := range ids {
		if _, err := storage.Verify(id); err != nil {
			t.Errorf("checkpoint %d: %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, checkpoint.HolderName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the job ended, yet its root still names a holder (%v)", err)
	}
}

// TestCheckpointFolderSharedAcrossProcesses runs this test binary again as
// a second process whose job checkpoints into a folder; a job of this
// process given the same folder fails at start, naming the folder, the
// other job and its pid. Once the other process is killed (SIGKILL: it
// releases nothing itself), the same job starts.
func TestCheckpointFolderSharedAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("WEIR_TEST_HOLD_CHECKPOINTS"); dir != "" {
		holdCheckpoints(t, dir)
		return
	}
	dir := t.TempDir()
	var out strings.Builder
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointFolderSharedAcrossProcesses$")
	cmd.Env = append(os.Environ(), "WEIR_TEST_HOLD_CHECKPOINTS="+dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()
	// The other job runs once it has completed a checkpoint.
	for newestComplete(t, dir) == 0 {
		select {
		case <-exited:
			t.Fatalf("the other process ended (%v) before its job checkpointed:\n%s", waitErr, out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if h, err := os.ReadFile(filepath.Join(dir, checkpoint.HolderName)); err != nil ||
		!strings.Contains(string(h), fmt.Sprintf(`"pid":%d,`, cmd.Process.Pid)) {
		t.Errorf("the folder's holder file says %s (%v), want pid %d", h, err, cmd.Process.Pid)
	}

	opts := map[string]string{CheckpointIntervalOption: "5ms", CheckpointDirOption: dir, RestoreOption: "false"}
	_, _, err := runRestoreJob(t, "shared-second", "shared-2", opts, nil)
	if err == nil {
		t.Fatal("a second job checkpointed into a folder another process's job holds")
	}
	t.Logf("the second job failed: %v", err)
	for _, s := range []string{dir, fmt.Sprintf("pid %d", cmd.Process.Pid), "job shared-holder", "must not share"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error does not say %q", s)
		}
	}

	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	got, _, err := runRestoreJob(t, "shared-second", "shared-3", opts, nil)
	if err != nil {
		t.Fatalf("the holder was killed, yet the job could not start: %v", err)
	}
	if len(windowSums(got)) != restoreWindows {
		t.Errorf("the job emitted %v, want %d windows", got, restoreWindows)
	}
}

// TestRefusedJobLeavesTheHoldersCheckpoint submits a job into a root
// another job holds while that job is writing a checkpoint: the job is
// refused, and the checkpoint in flight is where it was. (A job once read
// the root before taking its lock, in a way that removed unfinished
// checkpoints: the holder's checkpoint failed, the holder restarted, and
// the refused job took the root in the restart's pause.)
func TestRefusedJobLeavesTheHoldersCheckpoint(t *testing.T) {
	dir := t.TempDir()
	held, err := checkpoint.LockRoot(nil, dir, checkpoint.Holder{PID: os.Getpid(), Job: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	inFlight := filepath.Join(dir, "chk-5.tmp")
	if err := os.Mkdir(inFlight, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := map[string]string{CheckpointIntervalOption: "5ms", CheckpointDirOption: dir}
	if _, _, err := runRestoreJob(t, "refused", "refused-1", opts, nil); err == nil || !strings.Contains(err.Error(), "must not share") {
		t.Fatalf("a job into a held root: %v, want it refused", err)
	}
	if _, err := os.Stat(inFlight); err != nil {
		t.Errorf("the holder's checkpoint in flight is gone after the refused job: %v", err)
	}
}

// holdCheckpoints is the other process of
// TestCheckpointFolderSharedAcrossProcesses: an endless job checkpointing
// into dir, until the test kills this process.
func holdCheckpoints(t *testing.T, dir string) {
	if err := flag.Set("job_name", "shared-holder"); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{CheckpointIntervalOption: "50ms", CheckpointDirOption: dir} {
		beam.PipelineOptions.Set(k, v)
	}
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, &endlessFn{}, beam.Impulse(s))
	_, err := Execute(context.Background(), p)
	t.Fatalf("the endless job ended: %v", err)
}
