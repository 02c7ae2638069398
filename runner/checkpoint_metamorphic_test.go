package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
)

// burstFn emits positions 0..N-1, position i at event time i seconds,
// Chunk positions per bundle: it claims them, emits them, moves its
// watermark to the last and resumes, so the job runs over many bundles,
// checkpoints fall between them, and windows close as it goes.
type burstFn struct{ N, Chunk int64 }

func (f *burstFn) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: f.N}
}

func (*burstFn) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (*burstFn) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 { return r.Size() }

func (*burstFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

func (*burstFn) CreateWatermarkEstimator() *sdf.ManualWatermarkEstimator {
	return &sdf.ManualWatermarkEstimator{}
}

func (f *burstFn) ProcessElement(we *sdf.ManualWatermarkEstimator, rt *sdf.LockRTracker, _ []byte,
	emit func(beam.EventTime, int)) sdf.ProcessContinuation {
	start := rt.GetRestriction().(offsetrange.Restriction).Start
	for p := start; p < start+f.Chunk; p++ {
		if !rt.TryClaim(p) {
			return sdf.StopProcessing()
		}
		t := mtime.FromMilliseconds(p * 1000)
		emit(t, int(p))
		we.UpdateWatermark(t.ToTime())
	}
	return sdf.ResumeProcessingIn(time.Millisecond)
}

// formatWindowSum names a key's group in its window: end, key, sum and
// count of its values. It is the slow stage: groups queue in front of it,
// so barriers find data to overtake.
func formatWindowSum(w beam.Window, k int, vs func(*int) bool) string {
	time.Sleep(4 * time.Millisecond)
	sum, n, v := 0, 0, 0
	for vs(&v) {
		sum += v
		n++
	}
	return fmt.Sprintf("%d/%d: sum %d of %d", w.MaxTimestamp().Milliseconds()+1, k, sum, n)
}

func init() {
	register.DoFn4x1[*sdf.ManualWatermarkEstimator, *sdf.LockRTracker, []byte, func(beam.EventTime, int),
		sdf.ProcessContinuation](&burstFn{})
	register.Emitter2[beam.EventTime, int]()
	register.Function3x1(formatWindowSum)
}

const metaN = 240 // positions; 24 ten-second windows

// metaExpected is the output computed here: every window's group of
// every key, once.
func metaExpected() []any {
	type wk struct{ end, key int64 }
	sums, counts := map[wk]int{}, map[wk]int{}
	var order []wk
	for p := int64(0); p < metaN; p++ {
		k := wk{(p/10 + 1) * 10000, p % 5}
		if counts[k] == 0 {
			order = append(order, k)
		}
		sums[k] += int(p)
		counts[k]++
	}
	var out []any
	for _, k := range order {
		out = append(out, fmt.Sprintf("%d/%d: sum %d of %d", k.end, k.key, sums[k], counts[k]))
	}
	return out
}

// metaServers runs one job server per parallelism, as the in-process one
// but with the executor's parallelism set.
type metaServers map[int]*Server

func (m metaServers) get(t *testing.T, p int) *Server {
	if s := m[p]; s != nil {
		return s
	}
	s := NewServer(&LocalExecutor{Parallelism: p, StateDir: t.TempDir()},
		ServerOptions{StagingRoot: filepath.Join(os.TempDir(), "weir-staging")})
	if err := s.Start("localhost:0"); err != nil {
		t.Fatal(err)
	}
	m[p] = s
	return s
}

// TestCheckpointsDoNotChangeOutput is a metamorphic test: one pipeline (an
// SDF emitting event-timed positions in bundles, ten-second fixed windows,
// a group-by-key per window and key) over one input gives the same output,
// the one computed here, however checkpoints are taken (off, every 5ms,
// every 300ms; aligned, unaligned, aligned with a 1ms timeout), at any
// parallelism and bundle size. passert.Equals compares the output as a
// multiset inside the job, so an element a checkpoint dropped or
// duplicated fails the job. Where checkpoints are frequent and bundles
// small, it also checks that some completed, so the variant tested
// something.
func TestCheckpointsDoNotChangeOutput(t *testing.T) {
	servers := metaServers{}
	defer func() {
		for _, s := range servers {
			s.GracefulStop()
		}
	}()
	want := metaExpected()
	tests := []struct {
		interval, mode string // interval "" is off
		parallelism    int
		chunk          int64 // positions per bundle of the source
		wantCompleted  bool
	}{
		{"", "", 1, 1, false},
		{"", "", 3, metaN, false},
		{"", "", 2, 8, false},
		{"5ms", "aligned", 2, 1, true},
		{"5ms", "unaligned", 2, 1, true},
		{"5ms", "aligned-timeout", 3, 1, true},
		{"5ms", "unaligned", 1, 8, true},
		{"5ms", "aligned", 3, 8, true},
		{"5ms", "unaligned", 3, metaN, false},
		{"300ms", "aligned", 2, 8, false},
		{"300ms", "unaligned", 3, 1, false},
		{"300ms", "aligned-timeout", 1, 1, false},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("checkpoints=%s/%s/p=%d/bundle=%d", tt.interval, tt.mode, tt.parallelism, tt.chunk)
		if tt.interval == "" {
			name = fmt.Sprintf("checkpoints=off/p=%d/bundle=%d", tt.parallelism, tt.chunk)
		}
		t.Run(name, func(t *testing.T) {
			opts := map[string]string{}
			if tt.interval != "" {
				opts = map[string]string{CheckpointIntervalOption: tt.interval, CheckpointModeOption: tt.mode,
					CheckpointDirOption: t.TempDir()}
				if tt.mode == "aligned-timeout" {
					opts[CheckpointAlignedTimeoutOption] = "1ms"
				}
			}
			for k, v := range opts {
				beam.PipelineOptions.Set(k, v)
				defer beam.PipelineOptions.Set(k, "")
			}
			srv := servers.get(t, tt.parallelism)
			endpoint := *jobopts.Endpoint
			*jobopts.Endpoint = srv.Endpoint()
			defer func() { *jobopts.Endpoint = endpoint }()

			beam.Init()
			p, s := beam.NewPipelineWithRoot()
			pos := beam.ParDo(s, &burstFn{N: metaN, Chunk: tt.chunk}, beam.Impulse(s))
			keyed := beam.ParDo(s, modKey, beam.WindowInto(s, window.NewFixedWindows(10*time.Second), pos))
			out := beam.ParDo(s, formatWindowSum, beam.GroupByKey(s, keyed))
			passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), out), want...)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if _, err := Execute(ctx, p); err != nil {
				t.Fatal(err)
			}
			jobs := srv.Jobs()
			r := report(jobs[len(jobs)-1])
			var inFlight int64
			for _, row := range r.Checkpoints {
				inFlight += row.InFlightBytes
			}
			t.Logf("%d checkpoints completed, %d failed; the last %d had %d in-flight bytes", r.Completed, r.Failed,
				len(r.Checkpoints), inFlight)
			if tt.interval == "" && r.Completed != 0 {
				t.Errorf("checkpoints off, but %d completed", r.Completed)
			}
			if tt.wantCompleted && r.Completed == 0 {
				t.Errorf("no checkpoint completed: the variant tested nothing")
			}
			if tt.wantCompleted && tt.mode == "unaligned" {
				unaligned := int64(0)
				for _, row := range r.Checkpoints {
					unaligned += row.Unaligned
				}
				if unaligned == 0 {
					t.Errorf("no subtask went unaligned in the last %d checkpoints", len(r.Checkpoints))
				}
			}
		})
	}
}
