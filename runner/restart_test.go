package runner

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/joboptions"
)

// The restart tests kill the job's SDK worker while a bundle runs, after
// part of its output has reached the next stage: the worker is in this
// process (LOOPBACK), so its DoFns and the test share killer.

const (
	blockElems = 72       // elements per block
	blockBytes = 64 << 10 // bytes per element: a block is 4.7 MB, more than the Go SDK's 4 MB data chunk
)

// killer coordinates a kill between the job's DoFns and the test.
var killer struct {
	mu   sync.Mutex
	seen map[int64]bool // blocks whose output reached blockLineFn
	// armed makes a bundle of block from or later kill its worker once
	// ready is set: when waitSeen, after its output reached the next
	// stage. The bundle sends its block on kill and waits for killed.
	armed         bool
	waitSeen      bool
	from          int64
	ready, killed atomic.Bool
	kill          chan int64
	done          chan struct{}
	seenC         chan struct{} // closed and replaced when seen grows
	workers       *workerSet    // the job's workers now
}

func armKiller(from int64, waitSeen bool) {
	killer.mu.Lock()
	defer killer.mu.Unlock()
	killer.seen, killer.armed, killer.waitSeen, killer.from = map[int64]bool{}, true, waitSeen, from
	killer.ready.Store(false)
	killer.killed.Store(false)
	killer.kill, killer.done, killer.seenC = make(chan int64, 1), make(chan struct{}), make(chan struct{})
	testHookWorkers = func(_ *Job, ws *workerSet) {
		killer.mu.Lock()
		defer killer.mu.Unlock()
		killer.workers = ws
	}
}

func disarmKiller() {
	killer.mu.Lock()
	defer killer.mu.Unlock()
	killer.armed, killer.workers, testHookWorkers = false, nil, nil
}

// killWorkers stops every SDK worker of the job's current run, as a
// crash would: the runner loses them, and the pool stops their harness.
func killWorkers() {
	killer.mu.Lock()
	ws := killer.workers
	killer.mu.Unlock()
	ws.mu.Lock()
	var stops []func()
	for _, w := range ws.current {
		stops = append(stops, ws.stops[w])
	}
	ws.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// bigBlocksFn reads blocks [0, Blocks): a bundle claims one block, emits
// its blockElems elements, and checkpoints. Armed (killer), a bundle from
// block killer.from on waits for killer.ready before it claims, by
// checkpointing, then kills its worker once.
type bigBlocksFn struct{ Blocks int64 }

func (f *bigBlocksFn) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: f.Blocks}
}

func (*bigBlocksFn) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (*bigBlocksFn) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 { return r.Size() }

func (*bigBlocksFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

func (*bigBlocksFn) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func([]byte)) sdf.ProcessContinuation {
	b := rt.GetRestriction().(offsetrange.Restriction).Start
	killer.mu.Lock()
	armed := killer.armed && b >= killer.from && !killer.killed.Load()
	kill, done := killer.kill, killer.done // a later test re-arms them
	killer.mu.Unlock()
	if armed && !killer.ready.Load() {
		return sdf.ResumeProcessingIn(10 * time.Millisecond)
	}
	if !rt.TryClaim(b) {
		return sdf.StopProcessing()
	}
	for i := range blockElems {
		e := make([]byte, blockBytes)
		binary.BigEndian.PutUint64(e, uint64(b))
		binary.BigEndian.PutUint64(e[8:], uint64(i))
		emit(e)
	}
	if armed && killer.killed.CompareAndSwap(false, true) {
		if killer.waitSeen {
			waitSeen(b)
		}
		kill <- b
		<-done
		return sdf.StopProcessing() // the worker is gone: nothing of this is kept
	}
	return sdf.ResumeProcessingIn(0)
}

// waitSeen waits until some of block b's output reached blockLineFn.
func waitSeen(b int64) {
	for {
		killer.mu.Lock()
		seen, c := killer.seen[b], killer.seenC
		killer.mu.Unlock()
		if seen {
			return
		}
		<-c
	}
}

// blockLineFn turns an element of bigBlocksFn into the line "block-index",
// noting its block as seen.
func blockLineFn(e []byte) []byte {
	b, i := int64(binary.BigEndian.Uint64(e)), binary.BigEndian.Uint64(e[8:])
	killer.mu.Lock()
	if killer.seen != nil && !killer.seen[b] {
		killer.seen[b] = true
		close(killer.seenC)
		killer.seenC = make(chan struct{})
	}
	killer.mu.Unlock()
	return fmt.Appendf(nil, "%d-%d", b, i)
}

func init() {
	register.DoFn3x1[*sdf.LockRTracker, []byte, func([]byte), sdf.ProcessContinuation](&bigBlocksFn{})
	register.Function1x1(blockLineFn)
}

// allBlockLines are the lines of blocks [0, n), sorted.
func allBlockLines(n int64) []string {
	var out []string
	for b := range n {
		for i := range blockElems {
			out = append(out, fmt.Sprintf("%d-%d", b, i))
		}
	}
	slices.Sort(out)
	return out
}

// runKillJob runs bigBlocksFn's blocks, through a reshuffle so they cross
// to another stage, into files in dir with opts set, killing the worker
// of the bundle of block from or later: once ready (the test's) says so,
// and, when waitSeen, once part of its output has reached the next stage.
// It returns the job and the job's error.
func runKillJob(t *testing.T, dir string, blocks, from int64, waitSeen bool, opts map[string]string,
	ready func(*Job) bool) (*Job, error) {
	t.Helper()
	skipOnBeamDataRace(t, "killing a worker mid-bundle")
	for k, v := range opts {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	armKiller(from, waitSeen)
	defer disarmKiller()
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	big := beam.ParDo(s, &bigBlocksFn{Blocks: blocks}, beam.Impulse(s))
	fileio.Write(s, fileio.WriteConfig{Dir: dir, Suffix: ".txt"}, beam.ParDo(s, blockLineFn, beam.Reshuffle(s, big)))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Execute(ctx, p); done <- err }()
	job := waitRunning(ctx, t)
	for !ready(job) {
		select {
		case err := <-done:
			t.Fatalf("the job ended before the kill: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	killer.ready.Store(true)
	select {
	case b := <-killer.kill:
		killWorkers()
		close(killer.done)
		t.Logf("killed the worker in block %d", b)
	case err := <-done:
		t.Fatalf("the job ended without a kill: %v", err)
	}
	return job, <-done
}

// TestRestartFromCheckpointAfterWorkerLost kills the SDK worker of a job
// with checkpoints mid-bundle, once part of the bundle's output has gone
// downstream (bundles stream their output in such jobs) and some output
// is committed. The bundle cannot be retried alone; the job restarts from
// its last checkpoint, the file sink drops what it had not committed, the
// source reads again from the checkpoint's position, and the files hold
// every line exactly once.
func TestRestartFromCheckpointAfterWorkerLost(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	const blocks = 4
	job, err := runKillJob(t, dir, blocks, 1, true, map[string]string{CheckpointIntervalOption: "20ms",
		CheckpointDirOption: t.TempDir(), joboptions.RestartDelay: "10ms"},
		func(j *Job) bool { lines, _ := finalLines(t, dir); return completed(j) > 0 && len(lines) > 0 })
	if err != nil {
		t.Fatalf("the job failed: %v", err)
	}
	lines, temps := finalLines(t, dir)
	if want := allBlockLines(blocks); !slices.Equal(lines, want) || temps != 0 {
		t.Errorf("files hold %d lines and %d temporary files, want %d lines, each once, and none", len(lines), temps, len(want))
	}
	if n := job.View().Restarts; n != 1 {
		t.Errorf("the job's view counts %d restarts, want 1", n)
	}
	if !hasMessage(job, "went downstream") || !hasMessage(job, "restarting it from checkpoint") {
		t.Errorf("no message says the job restarted from a checkpoint after a bundle's output left")
	}
}

// TestStreamedLostWithoutCheckpointsFails: the same kill in a job without
// checkpoints that streams its bundles' output fails the job, saying
// why and what to set.
func TestStreamedLostWithoutCheckpointsFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	job, err := runKillJob(t, dir, 3, 1, true, map[string]string{joboptions.StreamBundleOutput: "on"},
		func(*Job) bool { return true })
	if err == nil {
		t.Fatal("the job succeeded")
	}
	for _, want := range []string{"went downstream", "--weir_checkpoint_interval", "--weir_stream_bundle_output=off"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n := job.View().Restarts; n != 0 {
		t.Errorf("the job restarted %d times without checkpoints", n)
	}
}

// TestBufferedLostWithoutCheckpointsRetried: without checkpoints bundles
// keep their output to their end by default, so the same kill costs a
// retry of the bundle alone, and the output is exact.
func TestBufferedLostWithoutCheckpointsRetried(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	const blocks = 3
	job, err := runKillJob(t, dir, blocks, 1, false, map[string]string{joboptions.StreamBundleOutput: "off"},
		func(*Job) bool { return true })
	if err != nil {
		t.Fatalf("the job failed: %v", err)
	}
	lines, temps := finalLines(t, dir)
	if want := allBlockLines(blocks); !slices.Equal(lines, want) || temps != 0 {
		t.Errorf("files hold %d lines and %d temporary files, want %d lines, each once, and none", len(lines), temps, len(want))
	}
	if !hasMessage(job, "retrying it on a new worker") || job.View().Restarts != 0 {
		t.Errorf("the lost bundle was not retried alone")
	}
}

// poisonFn fails on 3, every time.
func poisonFn(v int) (int, error) {
	if v == 3 {
		return 0, errors.New("poison record 3")
	}
	return v, nil
}

func init() { register.Function1x2(poisonFn) }

// TestRestartAttemptsExhausted: a job that fails the same way each time
// restarts as often as --weir_restart_attempts allows, then fails with
// the cause; its messages and its view count the restarts.
func TestRestartAttemptsExhausted(t *testing.T) {
	for k, v := range map[string]string{CheckpointIntervalOption: "1h", CheckpointDirOption: t.TempDir(),
		joboptions.RestartAttempts: "2", joboptions.RestartDelay: "10ms"} {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, poisonFn, beam.Create(s, 1, 2, 3, 4))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := Execute(ctx, p)
	if err == nil {
		t.Fatal("the job succeeded")
	}
	jobs := inProcessServer().Jobs()
	job := jobs[len(jobs)-1]
	jerr := job.Err()
	if jerr == nil || !strings.Contains(jerr.Error(), "poison record 3") || !strings.Contains(jerr.Error(), "restarted 2 times") {
		t.Errorf("the job's error %v, want the cause and the restarts", jerr)
	}
	if n := job.View().Restarts; n != 2 {
		t.Errorf("the job's view counts %d restarts, want 2", n)
	}
	msgs, _, _ := job.Updates(0)
	restarting := 0
	for _, m := range msgs {
		if strings.Contains(m.GetMessageText(), "restarting it where it started") {
			restarting++
		}
	}
	if restarting != 2 {
		t.Errorf("%d messages say the job restarts, want 2", restarting)
	}
}
