package runner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"

	weirstate "github.com/weir-runner/weir/state"
)

// windowBagFn keeps every value of a key and window in a bag and, when the
// window ends, emits how many there were. It never clears the bag: the
// runner must collect it when the window expires.
type windowBagFn struct {
	Seen  state.Bag[int]
	Flush timers.EventTime
}

func (fn *windowBagFn) ProcessElement(w beam.Window, sp state.Provider, tp timers.Provider, _ string, v int, _ func(int)) {
	if err := fn.Seen.Add(sp, v); err != nil {
		panic(err)
	}
	fn.Flush.Set(tp, w.MaxTimestamp().ToTime())
}

func (fn *windowBagFn) OnTimer(_ context.Context, _ beam.EventTime, sp state.Provider, _ timers.Provider, _ string, _ timers.Context, emit func(int)) {
	vs, _, err := fn.Seen.Read(sp)
	if err != nil {
		panic(err)
	}
	emit(len(vs))
}

func keyOne(k string) (string, int) { return k, 1 }

func init() {
	register.DoFn6x0[beam.Window, state.Provider, timers.Provider, string, int, func(int)](&windowBagFn{})
	register.Function1x2(keyOne)
}

// TestStreamingStateStaysBounded runs a streaming job through many
// one-second windows: each window's keys fill bags that are never cleared.
// Sampling the job's store while it runs shows the user state of expired
// windows is collected, so the store holds a few windows' worth at most,
// not the whole history.
func TestStreamingStateStaysBounded(t *testing.T) {
	const windows, keys = 150, 10

	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	cfg := keyedSecondsStream(windows, keys)
	in := beam.WindowInto(s, window.NewFixedWindows(time.Second), teststream.Create(s, cfg))
	counts := beam.ParDo(s, &windowBagFn{Seen: state.MakeBagState[int]("seen"), Flush: timers.InEventTime("flush")},
		beam.ParDo(s, keyOne, in))
	counts = beam.WindowInto(s, window.NewGlobalWindows(), counts)
	passert.Count(s, counts, "firings", windows*keys)
	passert.Sum(s, counts, "values", windows*keys, 2*windows*keys)

	most, samples := peakUserState(t, p, 10)
	// Without collection the bags of all windows stay: 2 appends per key
	// and window, 3000 records. A few windows' worth is tens.
	if limit := 10 * 2 * keys; most > limit {
		t.Fatalf("the store held up to %d user state records over %d windows, want at most %d", most, windows, limit)
	}
	t.Logf("at most %d user state records over %d windows (%d samples)", most, windows, samples)
}

// peakUserState runs p, counting the user state records of every store
// every 5 ms, and returns the most it saw and how many counts it took;
// fewer than minSamples fails the test, as the job ended too soon to tell.
func peakUserState(t *testing.T, p *beam.Pipeline, minSamples int) (most, samples int) {
	t.Helper()
	executeSampling(t, p, 2*time.Minute, 5*time.Millisecond, func(stores []*weirstate.Store) {
		for _, st := range stores {
			// The store closes when the job ends; a failed count then is
			// no sample.
			if n, err := st.Count(weirstate.KindUserState); err == nil {
				most, samples = max(most, n), samples+1
			}
		}
	})
	if samples < minSamples {
		t.Fatalf("only %d samples of the store while the job ran", samples)
	}
	return most, samples
}

// keyedSecondsStream is a TestStream of one-second windows: in each, every
// one of keys keys twice (at 500 and 600 ms), then the watermark to the
// window's end; at the end, to infinity.
func keyedSecondsStream(windows, keys int) teststream.Config {
	cfg := teststream.NewConfig()
	for w := range windows {
		var ks []any
		for k := range keys {
			ks = append(ks, fmt.Sprint("k", k))
		}
		cfg.AddElements(int64(w*1000+500), ks...)
		cfg.AddElements(int64(w*1000+600), ks...)
		cfg.AdvanceWatermark(int64((w + 1) * 1000))
	}
	cfg.AdvanceWatermarkToInfinity()
	return cfg
}
