package runner

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/synthetic"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/weir-runner/weir/executor"
)

// keyCountFn counts the values of a key.
type keyCountFn struct{}

func (*keyCountFn) CreateAccumulator() int         { return 0 }
func (*keyCountFn) AddInput(a int, _ []byte) int   { return a + 1 }
func (*keyCountFn) MergeAccumulators(a, b int) int { return a + b }
func (*keyCountFn) ExtractOutput(a int) int        { return a }

// rangeFn emits 0..N-1.
type rangeFn struct{ N int }

func (fn *rangeFn) ProcessElement(_ []byte, emit func(int)) {
	for i := range fn.N {
		emit(i)
	}
}

// oneFn keys i by i%Mod, or by i when Mod is 0, with the value 1, and
// counts the elements it sees in onesCounter.
type oneFn struct{ Mod int }

var onesCounter = beam.NewCounter("weir.test", "ones")

func (fn *oneFn) ProcessElement(ctx context.Context, i int) (int, int) {
	onesCounter.Inc(ctx, 1)
	if fn.Mod > 0 {
		return i % fn.Mod, 1
	}
	return i, 1
}

func init() {
	register.Combiner3[int, []byte, int](&keyCountFn{})
	register.DoFn2x0[[]byte, func(int)](&rangeFn{})
	register.DoFn2x2[context.Context, int, int, int](&oneFn{})
	register.Emitter1[int]()
}

// TestAdaptivePrecombine runs lifted combines whose keys are unique or
// repeat, from an SDF source (bundles cut by progress) and from a reshuffle
// (bundles cut by size). Where keys are unique the combine
// must run unlifted, or, with unlifting off, convert; where they repeat it
// must keep precombining; and the result must be exact either way.
func TestAdaptivePrecombine(t *testing.T) {
	const n = 150000
	type want int
	const (
		precombine want = iota
		convert
		unlift
		fixed // nothing adaptive: no counters
	)
	for _, tc := range []struct {
		name  string
		build func(s beam.Scope) beam.PCollection // KV<K, int> values summing to n
		opts  map[string]string
		want  want
	}{
		{"sdf unique keys", func(s beam.Scope) beam.PCollection {
			return counts(s, synthetic.DefaultSourceConfig().NumElements(n).KeySize(10).ValueSize(10).Build())
		}, nil, unlift},
		{"sdf unique keys, unlifting off", func(s beam.Scope) beam.PCollection {
			return counts(s, synthetic.DefaultSourceConfig().NumElements(n).KeySize(10).ValueSize(10).Build())
		}, map[string]string{AdaptiveUnliftOption: "false"}, convert},
		{"sdf hot keys", func(s beam.Scope) beam.PCollection {
			return counts(s, synthetic.DefaultSourceConfig().NumElements(n).KeySize(10).ValueSize(10).
				NumHotKeys(10).HotKeyFraction(1).Build())
		}, nil, precombine},
		{"reshuffled unique keys", func(s beam.Scope) beam.PCollection { return ones(s, n, 0) }, nil, unlift},
		{"reshuffled unique keys, unlifting off", func(s beam.Scope) beam.PCollection { return ones(s, n, 0) },
			map[string]string{AdaptiveUnliftOption: "false"}, convert},
		{"reshuffled repeating keys", func(s beam.Scope) beam.PCollection { return ones(s, n, 10) }, nil, precombine},
		// A job that checkpoints keeps its combines lifted; it converts.
		{"reshuffled unique keys, checkpointing", func(s beam.Scope) beam.PCollection { return ones(s, n, 0) },
			map[string]string{CheckpointIntervalOption: "1h", CheckpointDirOption: "{tmp}"}, convert},
		{"unique keys with adaptive precombining off", func(s beam.Scope) beam.PCollection { return ones(s, n, 0) },
			map[string]string{AdaptivePrecombineOption: "false"}, fixed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			beam.Init()
			for k, v := range tc.opts {
				if v == "{tmp}" {
					v = t.TempDir()
				}
				beam.PipelineOptions.Set(k, v)
				defer beam.PipelineOptions.Set(k, "")
			}
			p, s := beam.NewPipelineWithRoot()
			passert.Equals(s, stats.Sum(s, beam.DropKey(s, tc.build(s))), n)
			res, err := Execute(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			// The check's global sum precombines too: only the counters
			// of the combine under test count, the first made (its
			// composite's scope has the lower number).
			byStep := map[string]map[string]int64{}
			for _, c := range res.Metrics().Query(func(r beam.MetricResult) bool {
				return r.Namespace() == executor.MetricsNamespace && strings.HasSuffix(r.Transform(), "/Precombine")
			}).Counters() {
				if byStep[c.Transform()] == nil {
					byStep[c.Transform()] = map[string]int64{}
				}
				byStep[c.Transform()][c.Name()] += c.Committed
			}
			if tc.want != fixed && len(byStep) != 2 {
				t.Fatalf("counters of %d precombines, want 2: %v", len(byStep), byStep)
			}
			steps := slices.SortedFunc(maps.Keys(byStep), func(a, b string) int { return scopeNum(t, a) - scopeNum(t, b) })
			m := map[string]int64{}
			if len(steps) > 0 {
				m = byStep[steps[0]]
			}
			t.Logf("%s: %v", steps, m)
			pre, conv := m[executor.MetricPrecombinedBundles], m[executor.MetricConvertedBundles]
			sw, unl := m[executor.MetricPrecombineSwitches], m[executor.MetricUnliftedBundles]
			// A bundle run again unlifted counts as attempted, not
			// committed.
			for _, c := range res.Metrics().Query(func(r beam.MetricResult) bool {
				return r.Namespace() == "weir.test" && r.Name() == "ones"
			}).Counters() {
				t.Logf("ones: committed %d, attempted %d", c.Committed, c.Attempted)
				if c.Committed != n {
					t.Errorf("ones committed %d times, want %d", c.Committed, n)
				}
				if rerun := c.Attempted > c.Committed; rerun != (tc.want == unlift) {
					t.Errorf("ones attempted %d times, committed %d: bundles run again %v, want %v",
						c.Attempted, c.Committed, rerun, tc.want == unlift)
				}
			}
			switch tc.want {
			case fixed:
				if pre+conv+sw+unl != 0 {
					t.Errorf("adaptive precombining off, yet the runner counted %d/%d/%d/%d", pre, conv, sw, unl)
				}
			case unlift:
				// The bundles that measured were run again, unlifted: none
				// of them counts.
				if unl == 0 || pre+conv+sw != 0 {
					t.Errorf("unique keys: %d bundles unlifted, %d precombined, %d converted; want only unlifted", unl, pre, conv)
				}
			case convert:
				if pre == 0 || conv == 0 || sw == 0 || unl != 0 {
					t.Errorf("unique keys, unlifting off: %d precombined, %d converted after %d switches, %d unlifted; want some of the first three only",
						pre, conv, sw, unl)
				}
			case precombine:
				if pre == 0 || conv+sw+unl != 0 {
					t.Errorf("repeating keys: %d precombined, %d converted after %d switches, %d unlifted; want only precombined", pre, conv, sw, unl)
				}
			}
		})
	}
}

// scopeNum is the number of a Go SDK scope's transform ID, s<n>/...
func scopeNum(t *testing.T, step string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(strings.Split(step, "/")[0], "s"))
	if err != nil {
		t.Fatalf("step %q: %v", step, err)
	}
	return n
}

// counts counts the synthetic source's values per key.
func counts(s beam.Scope, cfg synthetic.SourceConfig) beam.PCollection {
	return beam.CombinePerKey(s, &keyCountFn{}, synthetic.SourceSingle(s, cfg))
}

// ones emits 0..n-1 through a reshuffle, so the combine's stage gets them
// in bundles, keyed by i%mod (by i when mod is 0), and sums 1 per key.
func ones(s beam.Scope, n, mod int) beam.PCollection {
	is := beam.Reshuffle(s, beam.ParDo(s, &rangeFn{N: n}, beam.Impulse(s)))
	return stats.SumPerKey(s, beam.ParDo(s, &oneFn{Mod: mod}, is))
}
