package executor

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/weir-runner/weir/fnapi"
)

// noWorkers has no worker to give: a bundle that would run fails, so a
// test sees when a stage runs one.
type noWorkers struct{}

func (noWorkers) Worker(context.Context, string) (*fnapi.Worker, error) {
	return nil, errors.New("a bundle ran")
}
func (noWorkers) Replace(context.Context, string, *fnapi.Worker) (*fnapi.Worker, error) {
	return nil, errors.New("a bundle ran")
}

// TestSDFResumeDelayRestored: an SDF's residual asked to resume in 10 s;
// a checkpoint 4 s later records it, and a stage restored from it 2 s
// after that runs it at the 10 s mark, not at once and not lost: neither
// the restored ports' watermarks nor barriers run it early (the stage
// wakes for it), and once its input has ended, Finish waits for it. In
// virtual time (testing/synctest): "a bundle ran" is the residual running.
func TestSDFResumeDelayRestored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		spec := &SDKStageSpec{Name: "sdf", SDF: true, Workers: noWorkers{}}
		a := NewSDKStage(spec, &Output{})
		start := time.Now()
		err := a.residuals(&fnpb.ProcessBundleResponse{ResidualRoots: []*fnpb.DelayedBundleApplication{{
			Application:        &fnpb.BundleApplication{Element: []byte("restriction")},
			RequestedTimeDelay: durationpb.New(10 * time.Second)}}})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * time.Second)
		if err := a.Barrier(ctx, 1); err != nil {
			t.Fatalf("the barrier ran the residual 6 s early: %v", err)
		}
		snap, err := a.SnapshotState(1)
		if err != nil {
			t.Fatal(err)
		}

		time.Sleep(2 * time.Second) // the crash, and the restart
		b := NewSDKStage(spec, &Output{})
		if err := b.RestoreState(snap); err != nil {
			t.Fatal(err)
		}
		if err := b.Watermark(ctx, 0, 100); err != nil {
			t.Fatalf("the restored port's watermark ran the residual early: %v", err)
		}
		if at, ok := b.NextWake(); !ok || !at.Equal(start.Add(10*time.Second)) {
			t.Errorf("the restored stage wakes at %v (%v), want 10 s after the residual came", at.Sub(start), ok)
		}
		if err := b.Watermark(ctx, 0, mtime.MaxTimestamp); err != nil {
			t.Fatalf("the end of the input ran the residual early: %v", err)
		}
		done := make(chan error, 1)
		go func() { done <- b.Finish(ctx) }()
		time.Sleep(4*time.Second - time.Millisecond)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Finish ran the residual %v after the residual came: %v; want 10 s", time.Since(start), err)
		default:
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "a bundle ran") {
				t.Errorf("Finish: %v, want the residual run", err)
			}
		default:
			t.Errorf("Finish has not run the residual 10 s after it came")
		}
	})
}

// TestSDFResumeDelayClockBehind: a restored stage waits no longer than
// what was left of the delay at the snapshot, even if its clock is behind
// the one that recorded the instant.
func TestSDFResumeDelayClockBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSDKStage(&SDKStageSpec{Name: "sdf", SDF: true, Workers: noWorkers{}}, &Output{})
		later := time.Now().Add(time.Hour).UnixMilli()
		snap := []byte(`{"pending":["cg=="],"resume_at_ms":` + strconv.FormatInt(later, 10) + `,"resume_left_ms":3000}`)
		if err := s.RestoreState(snap); err != nil {
			t.Fatal(err)
		}
		if at, ok := s.NextWake(); !ok || time.Until(at) != 3*time.Second {
			t.Errorf("the restored stage wakes in %v (%v), want 3 s", time.Until(at), ok)
		}
	})
}
