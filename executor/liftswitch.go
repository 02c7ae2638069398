package executor

import (
	"encoding/binary"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/metrics"
)

// Adaptive precombining.
//
// A lifted combine precombines before the shuffle: the SDK keeps an
// accumulator per key for the bundle (the Go SDK a few thousand keys,
// evicting one per new key beyond) and emits them at the end. When keys
// repeat within a bundle this shrinks what crosses the shuffle; when they
// seldom do, every input still becomes an accumulator that is encoded,
// shuffled and merged, and the cache only adds its lookups and evictions.
// The Fn API has a step for that second case, convert-to-accumulators,
// which makes each input an accumulator on its own; its output is the
// precombine's in the same coder, so the merge after the shuffle cannot
// tell which ran, and the runner may pick either bundle by bundle with no
// other change to the job.
//
// liftSwitch makes that pick for one subtask from the SDK's element counts
// of the precombines' inputs and outputs: a precombine that keeps more than
// liftKeep of what it reads is not worth its cache, and the stage converts.
// Converting bundles still measure nothing, so now and then one bundle
// precombines again as a probe, at intervals that double while the answer
// stays the same. This is the choice Flink's adaptive local hash
// aggregation makes from a sample of its input; here it is remade for as
// long as the job runs, since a stream's keys change.
type liftSwitch struct {
	convert bool
	// in and out are what precombined bundles read and wrote since the
	// last decision.
	in, out int64
	// left counts converting bundles down to the next probe; every is the
	// probes' interval.
	left, every int
	// switches counts changes of mode since takeSwitches, for metrics.
	switches int64
}

// takeSwitches returns the changes of mode since it was last called.
func (l *liftSwitch) takeSwitches() int64 {
	n := l.switches
	l.switches = 0
	return n
}

// liftUse is how a bundle runs a stage's precombines.
type liftUse int

const (
	liftNone       liftUse = iota // the stage has none, or the bundle is not the stage's own
	liftPrecombine                // the stage's own descriptor
	liftConvert                   // LiftSpec.ConvertDescriptor
	liftUnlifted                  // UnliftSpec.Descriptor
)

// descriptor picks the descriptor of the stage's next bundle.
func (s *SDKStage) descriptor() (string, liftUse) {
	if d, use, ok := s.unliftedDescriptor(); ok {
		return d, use
	}
	if s.Spec.Lift == nil {
		return s.Spec.DescriptorID, liftNone
	}
	if s.lift.precombine() {
		return s.Spec.DescriptorID, liftPrecombine
	}
	return s.Spec.Lift.ConvertDescriptor, liftConvert
}

// liftFinished takes a finished bundle's counts and returns its monitoring
// infos with the runner's counters added.
func (s *SDKStage) liftFinished(infos []*pipepb.MonitoringInfo, use liftUse) []*pipepb.MonitoringInfo {
	ls := s.Spec.Lift
	if ls == nil || use == liftNone {
		return infos
	}
	switch use {
	case liftPrecombine:
		s.lift.finished(ls.counts(infos))
	case liftUnlifted:
		return append(slices.Clip(infos), ls.metrics(MetricUnliftedBundles, 0)...)
	}
	name := MetricPrecombinedBundles
	if use == liftConvert {
		name = MetricConvertedBundles
	}
	return append(slices.Clip(infos), ls.metrics(name, s.lift.takeSwitches())...)
}

const (
	// liftKeep is the fraction of its inputs a precombine may emit and
	// still be worth running.
	liftKeep = 0.8
	// liftEvidence is the inputs finished bundles must have read before a
	// decision: a bundle's counts are exact, the cache having been emitted.
	liftEvidence = 4096
	// liftRunningEvidence is the inputs a running bundle must have read
	// before its counts decide: until the bundle ends its cache holds keys
	// not yet counted as output (2,000 in the Go SDK), so it needs enough
	// inputs for those to be a small part.
	liftRunningEvidence = 20000
	liftFirstProbe      = 4
	liftMaxProbe        = 256
)

// precombine reports whether the next bundle precombines: always, unless
// the stage converts, where one bundle in every interval probes.
func (l *liftSwitch) precombine() bool {
	if !l.convert {
		return true
	}
	if l.left > 0 {
		l.left--
		return false
	}
	l.left = l.every
	return true
}

// finished takes a precombined bundle's counts.
func (l *liftSwitch) finished(in, out int64) {
	l.in += in
	l.out += out
	if l.in < liftEvidence {
		return
	}
	keep := float64(l.out) > liftKeep*float64(l.in)
	l.in, l.out = 0, 0
	switch {
	case keep && l.convert: // a probe agrees: probe less often
		l.every = min(2*l.every, liftMaxProbe)
		l.left = l.every
	case keep:
		l.toConvert()
	case l.convert: // a probe found keys repeating again
		l.convert = false
		l.switches++
	}
}

// running takes a running precombined bundle's counts so far and reports
// whether the bundle should stop early, so that what it has left runs
// converted: when those counts alone are evidence enough that precombining
// does not pay.
func (l *liftSwitch) running(in, out int64) bool {
	if in < liftRunningEvidence || float64(out) <= liftKeep*float64(in) {
		return false
	}
	if !l.convert {
		l.in, l.out = 0, 0
		l.toConvert()
	}
	return true
}

func (l *liftSwitch) toConvert() {
	l.convert = true
	l.every = liftFirstProbe
	l.left = l.every
	l.switches++
}

// LiftSpec describes an SDK stage's precombines and the descriptor that
// converts instead (translate.Plan.ConvertDescriptor).
type LiftSpec struct {
	ConvertDescriptor string
	// Transforms are the precombine transforms, whose metrics the runner
	// adds to; Inputs and Outputs are the PCollections they read and
	// write.
	Transforms      []string
	Inputs, Outputs []string
}

// Counters of the precombine steps, in MetricsNamespace under each
// precombine transform.
const (
	MetricPrecombinedBundles = "precombined_bundles" // bundles that precombined
	MetricConvertedBundles   = "converted_bundles"   // bundles that converted instead
	MetricPrecombineSwitches = "precombine_switches" // changes between the two
	MetricUnliftedBundles    = "unlifted_bundles"    // bundles that ran the combine unlifted (unlift.go)
)

// counts sums the SDK's element counts of the precombines' inputs and
// outputs in a bundle's or a progress report's monitoring infos.
func (ls *LiftSpec) counts(infos []*pipepb.MonitoringInfo) (in, out int64) {
	for _, mi := range infos {
		if mi.GetUrn() != "beam:metric:element_count:v1" {
			continue
		}
		v, n := binary.Uvarint(mi.GetPayload())
		if n <= 0 {
			continue
		}
		pc := mi.GetLabels()["PCOLLECTION"]
		for _, id := range ls.Inputs {
			if id == pc {
				in += int64(v)
			}
		}
		for _, id := range ls.Outputs {
			if id == pc {
				out += int64(v)
			}
		}
	}
	return in, out
}

// metrics returns the runner's counters for one bundle: counter name, and
// the switches unless it is unlifted.
func (ls *LiftSpec) metrics(name string, switches int64) []*pipepb.MonitoringInfo {
	var out []*pipepb.MonitoringInfo
	for _, t := range ls.Transforms {
		out = append(out, metrics.UserCounter(MetricsNamespace, name, t, 1))
		if name != MetricUnliftedBundles {
			out = append(out, metrics.UserCounter(MetricsNamespace, MetricPrecombineSwitches, t, switches))
		}
	}
	return out
}
