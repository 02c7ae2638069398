package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"

	"github.com/weir-runner/weir/executor"
	weirstate "github.com/weir-runner/weir/state"
)

// hotValuesFn emits N values of key "hot", each a 100-digit number, and
// three of key "cold".
type hotValuesFn struct{ N int }

func (fn *hotValuesFn) ProcessElement(_ []byte, emit func(string, string)) {
	for i := range fn.N {
		emit("hot", fmt.Sprintf("%0100d", i))
	}
	for i := range 3 {
		emit("cold", fmt.Sprintf("%0100d", i))
	}
}

// countAndSum reads a group once and reports how many values it had and
// their sum.
func countAndSum(k string, vs func(*string) bool) string {
	var v string
	n, sum := 0, 0
	for vs(&v) {
		i, err := strconv.Atoi(v)
		if err != nil {
			panic(err)
		}
		n, sum = n+1, sum+i
	}
	return fmt.Sprintf("%s n=%d sum=%d", k, n, sum)
}

func init() {
	register.DoFn2x0[[]byte, func(string, string)](&hotValuesFn{})
	register.Emitter2[string, string]()
	register.Function2x1(countAndSum)
	register.Iter1[string]()
}

// hotKeyPipeline groups n values of one hot key and three of a cold one.
func hotKeyPipeline(n int) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	kvs := beam.ParDo(s, &hotValuesFn{N: n}, beam.Impulse(s))
	out := beam.ParDo(s, countAndSum, beam.GroupByKey(s, kvs))
	passert.Equals(s, out, fmt.Sprintf("hot n=%d sum=%d", n, n*(n-1)/2), "cold n=3 sum=3")
	return p
}

// TestHotKeyStreamsFromStore groups 20000 values of one key, 2 MB, with a
// 1000-byte inline bound: the group reaches the DoFn as a state-backed
// iterable read in pages from the store, and every value arrives once.
func TestHotKeyStreamsFromStore(t *testing.T) {
	beam.Init()
	beam.PipelineOptions.Set(InlineGroupOption, "1000")
	defer beam.PipelineOptions.Set(InlineGroupOption, "")
	var store *weirstate.Store
	testHookStore = func(s *weirstate.Store) { store = s }
	defer func() { testHookStore = nil }()
	p := hotKeyPipeline(20000)
	ctx := context.Background()
	res, err := Execute(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if n := store.Held(); n != 0 {
		t.Errorf("%d groups still held after the job, want 0", n)
	}
	counter := func(name string) int64 {
		var n int64
		for _, c := range res.Metrics().Query(func(r beam.MetricResult) bool {
			return r.Namespace() == executor.MetricsNamespace && r.Name() == name
		}).Counters() {
			n += c.Committed
		}
		return n
	}
	if n := counter(MetricHeldGroups); n != 1 {
		t.Errorf("%s = %d, want 1: only the hot group is held", MetricHeldGroups, n)
	}
	if n := counter(MetricHeldPages); n < 2 {
		t.Errorf("%s = %d, want 2 or more: 2 MB of values in 1 MiB pages", MetricHeldPages, n)
	}
}

type failingHeld struct{ executor.HeldStore }

func (failingHeld) ReadHeld([]byte, []byte, int) ([]byte, []byte, error) {
	return nil, nil, errors.New("injected read failure")
}

// TestHeldReadFailureFailsJob: when the store cannot read a held group, the
// bundle reading it fails, and so does the job, with an error that names
// the stage and the cause.
func TestHeldReadFailureFailsJob(t *testing.T) {
	beam.Init()
	beam.PipelineOptions.Set(InlineGroupOption, "1000")
	defer beam.PipelineOptions.Set(InlineGroupOption, "")
	testHookHeld = func(s executor.HeldStore) executor.HeldStore { return failingHeld{s} }
	defer func() { testHookHeld = nil }()
	p := hotKeyPipeline(2000)
	ctx := context.Background()
	_, err := Execute(ctx, p)
	if err == nil {
		t.Fatal("the job succeeded although its held group could not be read")
	}
	for _, want := range []string{"injected read failure", "read grouped values held in the store", "stage "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// coCount counts and sums the values of a key on both sides of a CoGBK.
func coCount(k string, left, right func(*string) bool) string {
	return countAndSum(k, left) + " / " + countAndSum(k, right)
}

func init() { register.Function3x1(coCount) }

// TestHotKeyCoGroupByKey runs a hot key through a CoGBK, where the Go SDK
// may iterate the group more than once (it opens the state-backed rest
// anew each time) and splits it by side.
func TestHotKeyCoGroupByKey(t *testing.T) {
	beam.Init()
	beam.PipelineOptions.Set(InlineGroupOption, "1000")
	defer beam.PipelineOptions.Set(InlineGroupOption, "")
	p, s := beam.NewPipelineWithRoot()
	left := beam.ParDo(s, &hotValuesFn{N: 3000}, beam.Impulse(s))
	right := beam.ParDo(s, &hotValuesFn{N: 1000}, beam.Impulse(s))
	out := beam.ParDo(s, coCount, beam.CoGroupByKey(s, left, right))
	passert.Equals(s, out, fmt.Sprintf("hot n=3000 sum=%d / hot n=1000 sum=%d", 3000*2999/2, 1000*999/2),
		"cold n=3 sum=3 / cold n=3 sum=3")
	ctx := context.Background()
	res, err := Execute(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var held int64
	for _, c := range res.Metrics().Query(func(r beam.MetricResult) bool { return r.Name() == MetricHeldGroups }).Counters() {
		held += c.Committed
	}
	if held != 1 {
		t.Errorf("%s = %d, want 1", MetricHeldGroups, held)
	}
}
