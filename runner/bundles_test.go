package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestBundleOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]any
		want bundleLimits
		err  string
	}{
		{nil, bundleLimits{}, ""},
		{map[string]any{"beam:option:weir_max_bundle_elements:v1": "100", "weir_max_bundle_bytes": "2048",
			"weir_max_bundle_time": "250ms"}, bundleLimits{elems: 100, bytes: 2048, time: 250 * time.Millisecond}, ""},
		{map[string]any{"weir_max_bundle_elements": "0"}, bundleLimits{}, `weir_max_bundle_elements="0"`},
		{map[string]any{"weir_max_bundle_bytes": "1MiB"}, bundleLimits{}, `weir_max_bundle_bytes="1MiB"`},
		{map[string]any{"weir_max_bundle_time": "-1s"}, bundleLimits{}, `weir_max_bundle_time="-1s"`},
	} {
		st, err := structpb.NewStruct(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := bundleOptions(&Job{Options: st, streamDefault: "off"})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one naming %s", tc.opts, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: %+v, %v; want %+v", tc.opts, got, err, tc.want)
		}
	}
}

// bundleCountFn counts the bundles and the elements it sees.
type bundleCountFn struct{}

var (
	bundlesCounter  = beam.NewCounter("weir.test", "bundles")
	elementsCounter = beam.NewCounter("weir.test", "elements")
)

func (*bundleCountFn) ProcessElement(ctx context.Context, _ int) { elementsCounter.Inc(ctx, 1) }
func (*bundleCountFn) FinishBundle(ctx context.Context)          { bundlesCounter.Inc(ctx, 1) }

func init() { register.DoFn2x0[context.Context, int](&bundleCountFn{}) }

// A reshuffle hands its consumer every element at once when the input
// ends, so the consumer's bundles are as large as the job allows.
func TestMaxBundleElementsOption(t *testing.T) {
	const n = 1000
	for _, tc := range []struct {
		limit      string
		minBundles int64
		maxBundles int64
	}{
		{"", 1, 4},           // the default is far above n: a bundle or two per subtask
		{"100", n / 100, 20}, // ten or eleven, more only if something else closed one
	} {
		t.Run("limit="+tc.limit, func(t *testing.T) {
			beam.Init()
			beam.PipelineOptions.Set(MaxBundleElementsOption, tc.limit)
			defer beam.PipelineOptions.Set(MaxBundleElementsOption, "")
			p, s := beam.NewPipelineWithRoot()
			is := beam.Reshuffle(s, beam.ParDo(s, &rangeFn{N: n}, beam.Impulse(s)))
			beam.ParDo0(s, &bundleCountFn{}, is)
			res, err := Execute(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, c := range res.Metrics().Query(func(r beam.MetricResult) bool {
				return r.Namespace() == "weir.test" && (r.Name() == "bundles" || r.Name() == "elements")
			}).Counters() {
				got[c.Name()] += c.Committed
			}
			if got["elements"] != n {
				t.Errorf("%d elements, want %d", got["elements"], n)
			}
			if b := got["bundles"]; b < tc.minBundles || b > tc.maxBundles {
				t.Errorf("%d bundles, want %d to %d", b, tc.minBundles, tc.maxBundles)
			}
		})
	}
}

// TestStreamsOutput: the job's on or off wins; at auto the server's
// default does; at auto there too, jobs that take checkpoints stream.
func TestStreamsOutput(t *testing.T) {
	for _, tc := range []struct {
		job    map[string]any
		server string
		want   bool
	}{
		{nil, "", false},
		{map[string]any{"weir_checkpoint_interval": "10s"}, "", true},
		{map[string]any{"weir_checkpoint_interval": "10s", "weir_stream_bundle_output": "off"}, "", false},
		{map[string]any{"weir_stream_bundle_output": "on"}, "", true},
		{map[string]any{"weir_stream_bundle_output": "on"}, "off", true},
		{map[string]any{"weir_stream_bundle_output": "auto"}, "on", true},
		{nil, "on", true},
		{map[string]any{"weir_checkpoint_interval": "10s"}, "off", false},
	} {
		st, err := structpb.NewStruct(tc.job)
		if err != nil {
			t.Fatal(err)
		}
		opts, err := (&Job{Options: st}).JobOptions()
		if err != nil {
			t.Fatal(err)
		}
		if got := streamsOutput(opts, tc.server); got != tc.want {
			t.Errorf("job %v, server %q: streams %v, want %v", tc.job, tc.server, got, tc.want)
		}
	}
}
