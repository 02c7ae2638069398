package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/weir-runner/weir/checkpoint"
)

// streamJob is the job whose TestStream runTestStreamJob's hook last saw.
var streamJob atomic.Pointer[Job]

// savepointPipeline is the stateful restore job with its stateful sum
// under a scope named version: renaming the scope renames the transform.
func savepointPipeline(run, version string) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	keyed := beam.ParDo(s, keyAll, restoreInput(s))
	sums := beam.ParDo(s.Scope(version), &windowSumFn{Vals: state.MakeBagState[int64]("vals"), Flush: timers.InEventTime("flush")}, keyed)
	beam.ParDo0(s, &collectFn{Run: run}, sums)
	return p
}

// savepointAt returns a TestStream hook that, before event stop, takes a
// savepoint of the job into dir (the replay polls for barriers meanwhile)
// and then fails the job as a crash would. The savepoint's folder goes to
// *path.
func savepointAt(dir string, stop int, path *string) func(context.Context, int, func() error) error {
	return func(ctx context.Context, i int, poll func() error) error {
		if i != stop {
			return nil
		}
		j := streamJob.Load()
		type result struct {
			res SavepointResult
			err error
		}
		done := make(chan result, 1)
		go func() {
			res, err := j.TakeSavepoint(ctx, dir, false)
			done <- result{res, err}
		}()
		for {
			if err := poll(); err != nil {
				return err
			}
			select {
			case r := <-done:
				if r.err != nil {
					return r.err
				}
				*path = r.res.Path
				return errCrash
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
}

// statefulName returns the name the savepoint records for the stateful
// transform's stage.
func statefulName(t *testing.T, path string) string {
	t.Helper()
	c, err := checkpoint.OpenSavepoint(vfs.Default, path)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Manifest.Savepoint {
		t.Errorf("the savepoint's manifest is not marked a savepoint")
	}
	for _, n := range c.Manifest.Graph {
		if n.Transform != "" {
			return n.Name
		}
	}
	t.Fatalf("the savepoint's graph %v has no stateful stage", c.Manifest.Graph)
	return ""
}

// TestSavepointRestoresRenamedTransform takes a savepoint of a running
// job while window 3's two elements are in its stateful transform's bag
// and its timer is set, stops the job, and starts a new job, whose
// stateful transform was renamed, from the savepoint through the mapping:
// window 3's sum comes out whole (the bag and the timer were restored
// under the new name), windows 4 and 5 follow, and windows 0 to 2, which
// fired before the savepoint, do not come out again. Without the mapping
// the savepoint is refused with what does not match; allowing dropped
// state starts the renamed transform empty, so window 3 is lost.
func TestSavepointRestoresRenamedTransform(t *testing.T) {
	spDir := t.TempDir()
	var path string
	opts := map[string]string{CheckpointIntervalOption: "1h", CheckpointDirOption: t.TempDir()}
	first, _, err := runRestoreJobOf(t, savepointPipeline("sp-1", "sumV1"), "savepoint-src", "sp-1", opts,
		savepointAt(spDir, eventOf(3, 2), &path))
	if !errors.Is(err, errCrash) && (err == nil || !strings.Contains(err.Error(), errCrash.Error())) {
		t.Fatalf("the first job ended with %v, want the simulated crash after the savepoint", err)
	}
	if path == "" || !strings.HasPrefix(path, spDir) {
		t.Fatalf("savepoint written to %q, want a folder in %s", path, spDir)
	}
	old := statefulName(t, path)
	if !strings.Contains(old, "sumV1") {
		t.Fatalf("the stateful stage is named %q, want it under scope sumV1", old)
	}
	renamed := strings.Replace(old, "sumV1", "sumV2", 1)
	for ts, sums := range windowSums(first) {
		if end, _ := strconv.Atoi(ts); end > 29999 {
			t.Errorf("the first job emitted window ending %s (%v) before the savepoint", ts, sums)
		}
	}

	t.Run("refused without the mapping", func(t *testing.T) {
		o := map[string]string{CheckpointIntervalOption: "1h", CheckpointDirOption: t.TempDir(), SavepointOption: path}
		_, _, err := runRestoreJobOf(t, savepointPipeline("sp-refused", "sumV2"), "savepoint-refused", "sp-refused", o, nil)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the state of %q", old)) ||
			!strings.Contains(err.Error(), "has no transform in the job") {
			t.Fatalf("a savepoint whose stateful transform was renamed started with %v, want a refusal naming %q", err, old)
		}
	})

	t.Run("mapped", func(t *testing.T) {
		o := map[string]string{CheckpointIntervalOption: "1h", CheckpointDirOption: t.TempDir(), SavepointOption: path,
			SavepointRenameOption: old + "=" + renamed}
		got, job, err := runRestoreJobOf(t, savepointPipeline("sp-mapped", "sumV2"), "savepoint-dst", "sp-mapped", o, nil)
		if err != nil {
			t.Fatalf("job started from the savepoint: %v", err)
		}
		if !hasMessage(job, "started from savepoint") {
			t.Errorf("the job did not report starting from the savepoint")
		}
		want := map[string][]string{}
		for w := 3; w < restoreWindows; w++ {
			want[fmt.Sprint(w*10000+9999)] = []string{fmt.Sprint(111 * (w + 1))}
		}
		if sums := windowSums(got); !mapsEqual(sums, want) {
			t.Errorf("the job from the savepoint emitted %v, want %v (window 3 from the restored bag and timer)", sums, want)
		}
	})

	t.Run("dropped", func(t *testing.T) {
		o := map[string]string{CheckpointIntervalOption: "1h", CheckpointDirOption: t.TempDir(), SavepointOption: path,
			SavepointAllowDroppedOption: "true"}
		got, job, err := runRestoreJobOf(t, savepointPipeline("sp-dropped", "sumV2"), "savepoint-dropped", "sp-dropped", o, nil)
		if err != nil {
			t.Fatalf("job started from the savepoint, dropping state: %v", err)
		}
		if !hasMessage(job, "dropped the state of") {
			t.Errorf("the job did not warn of the state it dropped")
		}
		sums := windowSums(got)
		if _, ok := sums["39999"]; ok {
			t.Errorf("window 3 came out (%v) though its state was dropped", sums["39999"])
		}
		if len(sums) != 2 {
			t.Errorf("the job emitted %v, want windows 4 and 5 only", sums)
		}
	})
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestStopWithSavepoint stops a job with a savepoint through the job
// service's weir.v1.Savepoints call, as `weir savepoint --stop` does: the
// job ends CANCELLED, and a job started from the savepoint continues it,
// so the two runs' output is the uninterrupted run's, each window once.
// That job then crashes and is started again with the same options: it
// resumes from its own checkpoints, not from the savepoint a second time.
func TestStopWithSavepoint(t *testing.T) {
	spDir := t.TempDir()
	var path string
	stop := func(ctx context.Context, i int, poll func() error) error {
		if i != eventOf(2, 1) {
			return nil
		}
		j := streamJob.Load()
		conn, err := grpc.NewClient(inProcessServer().Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer conn.Close()
		done := make(chan error, 1)
		go func() {
			// Not the job's context: the stop cancels that before the
			// answer arrives.
			rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := TakeSavepoint(rctx, conn, SavepointRequest{JobID: string(j.ID), Dir: spDir, Stop: true})
			path = res.Path
			done <- err
		}()
		// Poll for the savepoint's barrier until the stop cancels the job.
		for answered := false; ; {
			if err := poll(); err != nil {
				if !answered {
					if serr := <-done; serr != nil {
						return serr
					}
				}
				return err
			}
			select {
			case err := <-done:
				if err != nil {
					return err
				}
				answered = true
			case <-ctx.Done():
				if !answered {
					<-done
				}
				return ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
	opts := map[string]string{CheckpointIntervalOption: "1h", CheckpointDirOption: t.TempDir()}
	first, job, err := runRestoreJobOf(t, savepointPipeline("stop-1", "sum"), "stop-src", "stop-1", opts, stop)
	if st, _ := job.State(); st != jobpb.JobState_CANCELLED || !hasMessage(job, "stopping with savepoint") {
		t.Fatalf("the stopped job ended %v (%v), want CANCELLED with a message", st, err)
	}
	if path == "" {
		t.Fatal("no savepoint path returned")
	}

	ckDir := t.TempDir()
	o := map[string]string{CheckpointIntervalOption: "5ms", CheckpointDirOption: ckDir, SavepointOption: path,
		CheckpointKeepOption: "10"}
	second, job, err := runRestoreJobOf(t, savepointPipeline("stop-2", "sum"), "stop-dst", "stop-2", o,
		crashAt(t, ckDir, eventOf(4, 2), 2))
	if err == nil || !strings.Contains(err.Error(), errCrash.Error()) {
		t.Fatalf("the job from the savepoint ended with %v, want the simulated crash", err)
	}
	if !hasMessage(job, "started from savepoint") {
		t.Errorf("the second job did not start from the savepoint")
	}
	third, job, err := runRestoreJobOf(t, savepointPipeline("stop-3", "sum"), "stop-dst", "stop-3", o, nil)
	if err != nil {
		t.Fatalf("the job restarted after its crash: %v", err)
	}
	if !hasMessage(job, "restored from checkpoint") || hasMessage(job, "started from savepoint") {
		t.Errorf("after a crash the job started from the savepoint again, not from its own checkpoints")
	}
	got := windowSums(slices.Concat(first, second, third))
	for w := range restoreWindows {
		ts, want := fmt.Sprint(w*10000+9999), fmt.Sprint(111*(w+1))
		if s := got[ts]; len(s) != 1 || s[0] != want {
			t.Errorf("window %d came out as %v over the three runs, want [%s] once", w, s, want)
		}
	}
	t.Logf("stopped run %v, from the savepoint %v, after its crash %v", first, second, third)
}

// TestFailedSavepointKeepsTheJobRunning: a savepoint that cannot be
// written (its folder is a file) is reported to its caller as failed, and
// the job, which tolerates no failed checkpoint, runs on to the end.
func TestFailedSavepointKeepsTheJobRunning(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "not-a-folder")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var spErr error
	hook := func(ctx context.Context, i int, poll func() error) error {
		if i != eventOf(2, 1) {
			return nil
		}
		done := make(chan error, 1)
		go func() {
			_, err := streamJob.Load().TakeSavepoint(ctx, blocker, false)
			done <- err
		}()
		for {
			if err := poll(); err != nil {
				return err
			}
			select {
			case spErr = <-done:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
	opts := map[string]string{CheckpointIntervalOption: "1h", CheckpointDirOption: t.TempDir()}
	got, job, err := runRestoreJobOf(t, savepointPipeline("sp-fail", "sum"), "savepoint-fail", "sp-fail", opts, hook)
	if err != nil {
		t.Fatalf("the job failed with its savepoint: %v", err)
	}
	if spErr == nil || !strings.Contains(spErr.Error(), "savepoint") {
		t.Errorf("the savepoint into a file reported %v, want a failure", spErr)
	}
	if !hasMessage(job, "failed") {
		t.Errorf("the job did not report the failed savepoint")
	}
	t.Logf("the savepoint: %v", spErr)
	if sums := windowSums(got); len(sums) != restoreWindows {
		t.Errorf("the job emitted %v, want all %d windows", sums, restoreWindows)
	}
}
