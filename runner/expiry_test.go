package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"google.golang.org/protobuf/proto"
)

// The Go SDK has no OnWindowExpiration. Its harness calls OnTimer with the
// timers of any family the DoFn declares, so a DoFn that declares an
// event-time family it never sets, named the ParDo's OnWindowExpiration
// family by a hook on the pipeline (withWindowExpiration), sees only the
// runner's expiration timers on it: each is the callback, run by a real
// SDK harness over the Fn API.

// expiryCountFn keeps the values of a key and window in a bag and, when the
// window expires, emits the key with how many there were. It never clears
// the bag and never sets a timer.
type expiryCountFn struct {
	Seen   state.Bag[int]
	Expire timers.EventTime
}

func (fn *expiryCountFn) ProcessElement(sp state.Provider, _ timers.Provider, _ string, v int, _ func(string, int)) {
	if err := fn.Seen.Add(sp, v); err != nil {
		panic(err)
	}
}

func (fn *expiryCountFn) OnTimer(_ context.Context, _ beam.EventTime, sp state.Provider, _ timers.Provider, key string, tc timers.Context, emit func(string, int)) {
	if tc.Family != "expire" || tc.Tag != "" {
		panic(fmt.Sprintf("timer of family %q tag %q: only expirations (family expire, no tag) are expected", tc.Family, tc.Tag))
	}
	vs, _, err := fn.Seen.Read(sp)
	if err != nil {
		panic(err)
	}
	emit(key, len(vs))
}

// expirySumFn is windowSumFn (restore_test.go) whose sum comes from the
// window's expiration, not a timer it sets.
type expirySumFn struct {
	Vals   state.Bag[int64]
	Expire timers.EventTime
}

func (fn *expirySumFn) ProcessElement(sp state.Provider, _ timers.Provider, _ string, v int64, _ func(int64)) {
	if err := fn.Vals.Add(sp, v); err != nil {
		panic(err)
	}
}

func (fn *expirySumFn) OnTimer(_ context.Context, _ beam.EventTime, sp state.Provider, _ timers.Provider, _ string, _ timers.Context, emit func(int64)) {
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

func init() {
	register.DoFn5x0[state.Provider, timers.Provider, string, int, func(string, int)](&expiryCountFn{})
	register.DoFn5x0[state.Provider, timers.Provider, string, int64, func(int64)](&expirySumFn{})
}

// withWindowExpiration names family the OnWindowExpiration family of the
// ParDo whose name contains fn, and lists the requirement, as Java does.
func withWindowExpiration(t *testing.T, fn, family string) func(*pipepb.Pipeline) {
	return func(p *pipepb.Pipeline) {
		for _, tr := range p.GetComponents().GetTransforms() {
			if !strings.Contains(tr.GetUniqueName(), fn) || tr.GetSpec().GetUrn() != "beam:transform:pardo:v1" {
				continue
			}
			var pl pipepb.ParDoPayload
			if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pl); err != nil {
				t.Error(err)
				return
			}
			if _, ok := pl.GetTimerFamilySpecs()[family]; !ok {
				t.Errorf("ParDo %s has no timer family %s", tr.GetUniqueName(), family)
				return
			}
			pl.OnWindowExpirationTimerFamilySpec = family
			b, err := proto.Marshal(&pl)
			if err != nil {
				t.Error(err)
				return
			}
			tr.Spec.Payload = b
			p.Requirements = append(p.Requirements, "beam:requirement:pardo:on_window_expiration:v1")
			return
		}
		t.Errorf("no %s ParDo in the pipeline", fn)
	}
}

// TestWindowExpirationStreaming runs a streaming job through one-second
// windows with two seconds of allowed lateness: each key's expiration
// emits its count, which a group-by-key in windows with no lateness sums.
// The expiration fires once the watermark is past the window's end plus
// the lateness, and emits at the window's end: without the stage holding
// its output watermark there until then, the group would already have
// closed the window and dropped the count as late. Every key and window
// is counted once, with both its values (the state was there when the
// callback ran), and the store stays bounded (collected after it).
func TestWindowExpirationStreaming(t *testing.T) {
	const windows, keys = 60, 5
	testHookPipeline = withWindowExpiration(t, "expiryCountFn", "expire")
	defer func() { testHookPipeline = nil }()

	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	cfg := keyedSecondsStream(windows, keys)
	in := beam.WindowInto(s, window.NewFixedWindows(time.Second), teststream.Create(s, cfg),
		beam.AllowedLateness(2*time.Second))
	counts := beam.ParDo(s, &expiryCountFn{Seen: state.MakeBagState[int]("seen"), Expire: timers.InEventTime("expire")},
		beam.ParDo(s, keyOne, in))
	strict := beam.WindowInto(s, window.NewFixedWindows(time.Second), counts)
	sums := beam.DropKey(s, stats.SumPerKey(s, strict))
	sums = beam.WindowInto(s, window.NewGlobalWindows(), sums)
	passert.Count(s, sums, "key windows", windows*keys)
	passert.Sum(s, sums, "values", windows*keys, 2*windows*keys)

	most, samples := peakUserState(t, p, 3)
	// Uncollected, the bags of all windows stay: 2 values per key and
	// window, 600 records. The lateness keeps three windows, and subtasks
	// run a few windows apart.
	if limit := 10 * 2 * keys; most > limit {
		t.Fatalf("the store held up to %d user state records over %d windows, want at most %d", most, windows, limit)
	}
	t.Logf("at most %d user state records over %d windows (%d samples)", most, windows, samples)
}

// TestWindowExpirationBatch: in a bounded job every window expires at the
// end of input, the global window too; each key's callback sees all its
// values.
func TestWindowExpirationBatch(t *testing.T) {
	testHookPipeline = withWindowExpiration(t, "expiryCountFn", "expire")
	defer func() { testHookPipeline = nil }()
	for _, global := range []bool{false, true} {
		t.Run(fmt.Sprint("global=", global), func(t *testing.T) {
			beam.Init()
			p, s := beam.NewPipelineWithRoot()
			in := beam.Create(s, "a", "b", "a", "c", "a", "b")
			if !global {
				in = beam.WindowInto(s, window.NewFixedWindows(time.Second), in)
			}
			counts := beam.ParDo(s, &expiryCountFn{Seen: state.MakeBagState[int]("seen"), Expire: timers.InEventTime("expire")},
				beam.ParDo(s, keyOne, in))
			passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), beam.DropKey(s, counts)), 3, 2, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := Execute(ctx, p); err != nil {
				t.Fatal(err)
			}
		})
	}
}
