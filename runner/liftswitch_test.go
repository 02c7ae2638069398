package runner

import (
	"context"
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

// oneFn keys i by i%Mod, or by i when Mod is 0, with the value 1.
type oneFn struct{ Mod int }

func (fn *oneFn) ProcessElement(i int) (int, int) {
	if fn.Mod > 0 {
		return i % fn.Mod, 1
	}
	return i, 1
}

func init() {
	register.Combiner3[int, []byte, int](&keyCountFn{})
	register.DoFn2x0[[]byte, func(int)](&rangeFn{})
	register.DoFn1x2[int, int, int](&oneFn{})
	register.Emitter1[int]()
}

// TestAdaptivePrecombine runs lifted combines whose keys are unique or
// repeat, from an SDF source (bundles cut by progress) and from a reshuffle
// (bundles of at most 4096 elements). Where keys are unique the stage must
// switch to converting, where they repeat it must keep precombining, and
// the result must be exact either way.
func TestAdaptivePrecombine(t *testing.T) {
	const n = 150000
	for _, tc := range []struct {
		name    string
		build   func(s beam.Scope) beam.PCollection // KV<K, int> values summing to n
		convert bool
		fixed   bool // --weir_adaptive_precombine=false
	}{
		{"sdf unique keys", func(s beam.Scope) beam.PCollection {
			return counts(s, synthetic.DefaultSourceConfig().NumElements(n).KeySize(10).ValueSize(10).Build())
		}, true, false},
		{"sdf hot keys", func(s beam.Scope) beam.PCollection {
			return counts(s, synthetic.DefaultSourceConfig().NumElements(n).KeySize(10).ValueSize(10).
				NumHotKeys(10).HotKeyFraction(1).Build())
		}, false, false},
		{"reshuffled unique keys", func(s beam.Scope) beam.PCollection { return ones(s, n, 0) }, true, false},
		{"reshuffled repeating keys", func(s beam.Scope) beam.PCollection { return ones(s, n, 10) }, false, false},
		{"unique keys with adaptive precombining off", func(s beam.Scope) beam.PCollection { return ones(s, n, 0) }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			beam.Init()
			if tc.fixed {
				beam.PipelineOptions.Set(AdaptivePrecombineOption, "false")
				defer beam.PipelineOptions.Set(AdaptivePrecombineOption, "")
			}
			p, s := beam.NewPipelineWithRoot()
			passert.Equals(s, stats.Sum(s, beam.DropKey(s, tc.build(s))), n)
			res, err := Execute(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			counter := func(name string) int64 {
				var v int64
				for _, c := range res.Metrics().Query(func(r beam.MetricResult) bool {
					return r.Namespace() == executor.MetricsNamespace && r.Name() == name
				}).Counters() {
					v += c.Committed
				}
				return v
			}
			pre, conv, sw := counter(executor.MetricPrecombinedBundles), counter(executor.MetricConvertedBundles),
				counter(executor.MetricPrecombineSwitches)
			t.Logf("precombined %d, converted %d, switches %d", pre, conv, sw)
			if pre == 0 && !tc.fixed {
				t.Errorf("no bundle precombined: the first must, to measure")
			}
			if tc.fixed && pre+conv+sw != 0 {
				t.Errorf("adaptive precombining off, yet the runner counted %d/%d/%d", pre, conv, sw)
			}
			if tc.convert && (conv == 0 || sw == 0) {
				t.Errorf("unique keys: %d bundles converted after %d switches, want some", conv, sw)
			}
			if !tc.convert && (conv != 0 || sw != 0) {
				t.Errorf("repeating keys: %d bundles converted after %d switches, want none", conv, sw)
			}
		})
	}
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
