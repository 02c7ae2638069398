// Command streamlatency measures how long an element takes to reach the
// next stage when it comes out of a long bundle, with weir's bundles
// keeping their output to their end (buffered) and sending it on as it
// arrives (streamed, --weir_stream_bundle_output=on).
//
// A splittable DoFn emits, in each bundle, -rate elements a second of
// -size bytes for -bundle, each stamped with the wall clock; a reshuffle
// puts the next DoFn in a stage of its own, which notes each element's
// age. The SDK worker runs in this process (LOOPBACK), so both read one
// clock. Each configuration runs -runs times, modes alternating, and the
// quantiles are over all their elements:
//
//	go run ./pipelines/streamlatency --runner=weir -size 100 -rate 1000
//	go run ./pipelines/streamlatency --runner=weir -size 65536 -rate 200 -downstream-bundle-time 10ms
//
// The Go SDK sends a bundle's output in 4 MB chunks (and the rest at the
// bundle's end): output slower than that leaves the worker only when the
// bundle ends, whatever the runner does.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	_ "github.com/weir-runner/weir/runner" // registers --runner=weir
)

var (
	size       = flag.Int("size", 100, "bytes per element")
	rate       = flag.Int("rate", 1000, "elements a second")
	bundleFor  = flag.Duration("bundle", time.Second, "how long each bundle emits")
	bundles    = flag.Int("bundles", 5, "bundles per run")
	runs       = flag.Int("runs", 3, "runs per mode")
	downstream = flag.String("downstream-bundle-time", "", "--weir_max_bundle_time of the job (empty: weir's default)")
)

// emitFn emits Rate elements a second for For in each bundle, one bundle
// per offset of its restriction.
type emitFn struct {
	Bundles    int64
	Size, Rate int
	For        time.Duration
}

func (f *emitFn) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: f.Bundles}
}

func (*emitFn) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (*emitFn) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 { return r.Size() }

func (*emitFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

func (f *emitFn) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func([]byte)) sdf.ProcessContinuation {
	b := rt.GetRestriction().(offsetrange.Restriction).Start
	if !rt.TryClaim(b) {
		return sdf.StopProcessing()
	}
	n := int(f.For.Seconds() * float64(f.Rate))
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * f.For / time.Duration(n))))
		e := make([]byte, max(f.Size, 8))
		binary.BigEndian.PutUint64(e, uint64(time.Now().UnixNano()))
		emit(e)
	}
	return sdf.ResumeProcessingIn(0)
}

// ages are the ages of the elements the next stage saw.
var ages struct {
	sync.Mutex
	d []time.Duration
}

func noteAge(e []byte) {
	age := time.Since(time.Unix(0, int64(binary.BigEndian.Uint64(e))))
	ages.Lock()
	ages.d = append(ages.d, age)
	ages.Unlock()
}

func init() {
	register.DoFn3x1[*sdf.LockRTracker, []byte, func([]byte), sdf.ProcessContinuation](&emitFn{})
	register.Function1x0(noteAge)
}

func run(mode string) ([]time.Duration, error) {
	beam.PipelineOptions.Set("weir_stream_bundle_output", mode)
	if *downstream != "" {
		beam.PipelineOptions.Set("weir_max_bundle_time", *downstream)
	}
	p, s := beam.NewPipelineWithRoot()
	out := beam.ParDo(s, &emitFn{Bundles: int64(*bundles), Size: *size, Rate: *rate, For: *bundleFor}, beam.Impulse(s))
	beam.ParDo0(s, noteAge, beam.Reshuffle(s, out))
	ages.Lock()
	ages.d = nil
	ages.Unlock()
	if err := beamx.Run(context.Background(), p); err != nil {
		return nil, err
	}
	ages.Lock()
	defer ages.Unlock()
	return slices.Clone(ages.d), nil
}

func quantile(d []time.Duration, q float64) time.Duration {
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

func main() {
	flag.Parse()
	beam.Init()
	got := map[string][]time.Duration{}
	for range *runs {
		for _, mode := range []string{"off", "on"} {
			d, err := run(mode)
			if err != nil {
				log.Fatalf("%s: %v", mode, err)
			}
			got[mode] = append(got[mode], d...)
		}
	}
	fmt.Printf("%d B elements, %d/s, %v bundles, downstream bundle time %q, %d runs\n", *size, *rate, *bundleFor, *downstream, *runs)
	fmt.Println("| mode | elements | p50 | p90 | p99 | max |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	for _, mode := range []string{"off", "on"} {
		d := got[mode]
		slices.Sort(d)
		name := map[string]string{"off": "buffered", "on": "streamed"}[mode]
		fmt.Printf("| %s | %d | %v | %v | %v | %v |\n", name, len(d), quantile(d, .5).Round(time.Millisecond),
			quantile(d, .9).Round(time.Millisecond), quantile(d, .99).Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
}
