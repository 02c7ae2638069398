package source

import (
	"fmt"
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/generator"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

func init() {
	beam.RegisterType(reflect.TypeOf(Restriction{}))
	register.DoFn3x1[*sdf.LockRTracker, []byte, func(beam.EventTime, model.Event), error](&boundedFn{})
	register.DoFn4x2[*sdf.ManualWatermarkEstimator, *sdf.LockRTracker, []byte, func(beam.EventTime, model.Event), sdf.ProcessContinuation, error](&unboundedFn{})
	register.Emitter2[beam.EventTime, model.Event]()
}

// Bounded adds the events of cfg as a bounded PCollection of model.Event,
// each at its event time: a splittable DoFn over every generator's rows,
// started as cfg.SourceSplits restrictions, each a block of generators,
// which the runner may split further by rows. It reports no watermark:
// like Beam's bounded sources, the runner holds the watermark back until
// it has read everything.
func Bounded(s beam.Scope, cfg config.Config) beam.PCollection {
	s = s.Scope("nexmark.Generate")
	mustValidate(cfg)
	return beam.ParDo(s, &boundedFn{Cfg: cfg}, beam.Impulse(s))
}

// Unbounded adds the events of cfg as an unbounded PCollection: the same
// events as Bounded, with a watermark (Generator.Watermark of the next
// row, per restriction) and, with cfg.IsRateLimited, each row no earlier
// than due on the wall clock and the occasional event held back behind
// the watermark (generator.Release). It ends after cfg.NumEvents events
// (never, in practice, if that is 0); a drain stops it at once.
func Unbounded(s beam.Scope, cfg config.Config) beam.PCollection {
	s = s.Scope("nexmark.GenerateStream")
	mustValidate(cfg)
	return beam.ParDo(s, &unboundedFn{Cfg: cfg}, beam.Impulse(s))
}

func mustValidate(cfg config.Config) {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("nexmark source: %v", err)) // as Beam's constructors do
	}
}

// genFn holds what both DoFns share: their configuration, and the
// generator made from it on first use. (Each DoFn has its own fields, not
// an embedded genFn: the SDK serialises a DoFn's exported fields.)
type genFn struct {
	cfg *config.Config
	gen **generator.Generator
}

func (fn genFn) generator() *generator.Generator {
	if *fn.gen == nil {
		g, err := generator.New(*fn.cfg)
		if err != nil {
			panic(err) // validated when the pipeline was built
		}
		*fn.gen = g
	}
	return *fn.gen
}

func (fn genFn) initialRestriction() Restriction {
	g := fn.generator()
	return Restriction{GenLo: 0, GenHi: g.Generators(), Start: 0, End: g.Rows()}
}

func (fn genFn) split(r Restriction) []Restriction {
	return splitBlocks(r, fn.cfg.SourceSplits, fn.generator().Count)
}

// emitRow emits row n's events of the generators lo to hi that have one.
func emitRow(g *generator.Generator, lo, hi int, n int64, emit func(beam.EventTime, model.Event)) {
	for i := lo; i < hi; i++ {
		if n < g.Count(i) {
			e, ts := g.Event(i, n)
			emit(mtime.FromMilliseconds(ts), e)
		}
	}
}

func createTracker(r Restriction) *sdf.LockRTracker { return sdf.NewLockRTracker(newTracker(r)) }

type boundedFn struct {
	Cfg config.Config
	gen *generator.Generator
}

func (fn *boundedFn) fns() genFn { return genFn{&fn.Cfg, &fn.gen} }

func (fn *boundedFn) CreateInitialRestriction(_ []byte) Restriction {
	return fn.fns().initialRestriction()
}
func (fn *boundedFn) SplitRestriction(_ []byte, r Restriction) []Restriction {
	return fn.fns().split(r)
}
func (fn *boundedFn) RestrictionSize(_ []byte, r Restriction) float64 { return float64(r.Events()) }
func (fn *boundedFn) CreateTracker(r Restriction) *sdf.LockRTracker   { return createTracker(r) }

func (fn *boundedFn) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func(beam.EventTime, model.Event)) error {
	g := fn.fns().generator()
	r := rt.GetRestriction().(Restriction)
	for n := r.Start; rt.TryClaim(n); n++ {
		emitRow(g, r.GenLo, r.GenHi, n, emit)
	}
	return rt.GetError()
}

type unboundedFn struct {
	Cfg config.Config
	gen *generator.Generator
}

func (fn *unboundedFn) fns() genFn { return genFn{&fn.Cfg, &fn.gen} }

func (fn *unboundedFn) CreateInitialRestriction(_ []byte) Restriction {
	return fn.fns().initialRestriction()
}
func (fn *unboundedFn) SplitRestriction(_ []byte, r Restriction) []Restriction {
	return fn.fns().split(r)
}
func (fn *unboundedFn) RestrictionSize(_ []byte, r Restriction) float64 { return float64(r.Events()) }
func (fn *unboundedFn) CreateTracker(r Restriction) *sdf.LockRTracker   { return createTracker(r) }

// A call of ProcessElement returns to the runner after about this much
// work, so that its output commits and the watermark moves.
const (
	callBudget   = 500 * time.Millisecond
	minResumeGap = 20 * time.Millisecond // a rate-limited source sleeps at least this
)

func (fn *unboundedFn) CreateWatermarkEstimator(ms int64) *sdf.ManualWatermarkEstimator {
	return &sdf.ManualWatermarkEstimator{State: time.UnixMilli(ms)}
}

func (fn *unboundedFn) InitialWatermarkEstimatorState(_ beam.EventTime, r Restriction, _ []byte) int64 {
	return fn.fns().generator().Watermark(r.Start)
}

func (fn *unboundedFn) WatermarkEstimatorState(we *sdf.ManualWatermarkEstimator) int64 {
	return we.CurrentWatermark().UnixMilli()
}

// TruncateRestriction leaves nothing to do when the job drains: the
// stream has no natural end.
func (fn *unboundedFn) TruncateRestriction(rt *sdf.LockRTracker, _ []byte) Restriction {
	r := rt.GetRestriction().(Restriction)
	r.End = r.Start
	return r
}

func (fn *unboundedFn) ProcessElement(we *sdf.ManualWatermarkEstimator, rt *sdf.LockRTracker, _ []byte, emit func(beam.EventTime, model.Event)) (sdf.ProcessContinuation, error) {
	g := fn.fns().generator()
	r := rt.GetRestriction().(Restriction)
	wallBase := startClock(rt)
	held := newHeldQueue(g, r)
	start := time.Now()
	for n := r.Start; ; n++ {
		if g.Config().IsRateLimited {
			if wait := time.Until(time.UnixMilli(wallBase + g.DueMillis(n))); wait > 0 {
				return sdf.ResumeProcessingIn(max(wait, minResumeGap)), nil
			}
		}
		if time.Since(start) > callBudget {
			return sdf.ResumeProcessingIn(0), nil
		}
		if !rt.TryClaim(n) {
			return sdf.StopProcessing(), rt.GetError()
		}
		if g.DelaysOn() {
			held.emitRow(r.GenLo, r.GenHi, n, emit)
		} else {
			emitRow(g, r.GenLo, r.GenHi, n, emit)
		}
		we.UpdateWatermark(time.UnixMilli(g.Watermark(n + 1)))
	}
}

// startClock sets the wall clock base of rt's restriction on its first
// call and returns it.
func startClock(rt *sdf.LockRTracker) int64 {
	rt.Mu.Lock()
	defer rt.Mu.Unlock()
	t := rt.Rt.(*tracker)
	if t.wallBase == 0 {
		t.wallBase = time.Now().UnixMilli()
	}
	return t.wallBase
}
