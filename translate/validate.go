package translate

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/triggers"
)

// sdkURNs are the leaf transforms weir hands to SDK workers.
var sdkURNs = map[string]bool{
	URNParDo: true, URNWindowInto: true, URNMapWindows: true, URNMergeWindows: true,
	URNToString: true, URNCombineGrouped: true, URNCombinePGBKCV: true,
	URNCombineMerge: true, URNCombineExtract: true,
	URNPairWithRestr: true, URNSplitAndSize: true, URNProcessSized: true,
}

func isNative(urn string) bool {
	return urn == URNImpulse || urn == URNGBK || urn == URNFlatten || urn == URNReshuffle
}

// validate lists what weir cannot run about one leaf transform.
func (b *builder) validate(id string) []error {
	t := b.comps.Transforms[id]
	urn := t.GetSpec().GetUrn()
	where := fmt.Sprintf("transform %s (%s)", b.name(id), urn)
	var errs []error
	switch {
	case urn == URNReshuffle && (len(t.GetInputs()) != 1 || len(t.GetOutputs()) != 1):
		return []error{fmt.Errorf("%s: a reshuffle needs one input and one output, has %d and %d", where, len(t.GetInputs()), len(t.GetOutputs()))}
	case isNative(urn) && !b.sdkSide[id]:
	case sdkURNs[urn] || b.sdkSide[id]:
		env, ok := b.comps.GetEnvironments()[b.env(id)]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: environment %q is not defined", where, b.env(id)))
		} else if err := fnapi.SupportedEnvironment(env); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	default:
		return []error{fmt.Errorf("%s: transform URN is not supported", where)}
	}
	if pd := b.pardo(id); pd != nil {
		if isStateful(pd) && urn != URNParDo {
			errs = append(errs, fmt.Errorf("%s: user state or timers in a splittable DoFn are not supported", where))
		}
		for _, sid := range sortedKeys(pd.GetStateSpecs()) {
			// Map and set state come as map_spec and set_spec, served by
			// multimap state requests; a multimap cell of its own is what
			// no SDK harness reads over the Fn API yet (Java's sends a
			// state key with no type), so it would fail mid-bundle.
			if pd.GetStateSpecs()[sid].GetMultimapSpec() != nil {
				errs = append(errs, fmt.Errorf("%s: state %s is multimap state (multimap_spec), which is not supported", where, sid))
			}
		}
		if pd.GetRequiresTimeSortedInput() {
			errs = append(errs, fmt.Errorf("%s: time-sorted input is not supported", where))
		}
		for name, si := range pd.GetSideInputs() {
			switch p := si.GetAccessPattern().GetUrn(); p {
			case URNSideIterable, URNSideMultimap:
			default:
				errs = append(errs, fmt.Errorf("%s: side input %s uses access pattern %s, which is not supported", where, name, p))
			}
		}
	}
	for _, pc := range t.GetInputs() {
		errs = append(errs, b.validateWindowing(where, pc, urn == URNGBK)...)
	}
	return errs
}

func (b *builder) env(id string) string {
	t := b.comps.Transforms[id]
	if e := t.GetEnvironmentId(); e != "" {
		return e
	}
	// Transforms such as window_into may carry no environment; a pipeline
	// with one environment runs them there.
	for e := range b.comps.GetEnvironments() {
		if len(b.comps.GetEnvironments()) == 1 {
			return e
		}
	}
	return ""
}

// validateWindowing checks the windowing of a PCollection read by a
// transform. Grouping transforms need the runner to understand it fully.
func (b *builder) validateWindowing(where, pcoll string, grouping bool) []error {
	pc := b.comps.Pcollections[pcoll]
	ws, ok := b.comps.WindowingStrategies[pc.GetWindowingStrategyId()]
	if !ok {
		return []error{fmt.Errorf("%s: PCollection %q has no windowing strategy %q", where, pcoll, pc.GetWindowingStrategyId())}
	}
	var errs []error
	if wc := b.comps.Coders[ws.GetWindowCoderId()].GetSpec().GetUrn(); wc != "beam:coder:global_window:v1" && wc != "beam:coder:interval_window:v1" {
		errs = append(errs, fmt.Errorf("%s: window coder %s (%q) is not supported", where, ws.GetWindowCoderId(), wc))
	}
	// Stateful ParDos collect state by the allowed lateness too, so it is
	// checked on every input.
	if ws.GetAllowedLateness() < 0 {
		errs = append(errs, fmt.Errorf("%s: allowed lateness %d ms is negative", where, ws.GetAllowedLateness()))
	}
	if !grouping {
		return errs
	}
	switch fn := ws.GetWindowFn().GetUrn(); {
	case fn == URNGlobalWindows, fn == URNFixedWindows, fn == URNSlidingWindows, fn == URNSessions:
	case ws.GetMergeStatus() == pipepb.MergeStatus_NON_MERGING:
		// The SDK assigns the windows (window_into runs there); grouping
		// needs only their coder, checked above, to read each window's end.
	case ws.GetMergeStatus() == pipepb.MergeStatus_NEEDS_MERGE:
		errs = append(errs, fmt.Errorf("%s: merging window function %s is not supported (weir merges session windows only)", where, fn))
	default:
		errs = append(errs, fmt.Errorf("%s: window function %s (merge status %v) is not supported", where, fn, ws.GetMergeStatus()))
	}
	if isDefaultTrigger(ws.GetTrigger()) {
		return errs
	}
	if _, err := triggers.FromProto(ws.GetTrigger()); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", where, err))
	}
	switch m := ws.GetAccumulationMode(); m {
	case pipepb.AccumulationMode_UNSPECIFIED, pipepb.AccumulationMode_DISCARDING, pipepb.AccumulationMode_ACCUMULATING:
	default:
		errs = append(errs, fmt.Errorf("%s: accumulation mode %v is not supported", where, m))
	}
	return errs
}

func isDefaultTrigger(t *pipepb.Trigger) bool {
	if t == nil || t.GetDefault() != nil {
		return true
	}
	// AfterWatermark with no early or late firings fires exactly like the
	// default trigger.
	// The Go SDK writes an unset early trigger as Default, which cannot
	// fire before the end of the window either.
	if aw := t.GetAfterEndOfWindow(); aw != nil {
		e := aw.GetEarlyFirings()
		return (e == nil || e.GetDefault() != nil) && aw.GetLateFirings() == nil
	}
	return proto.Equal(t, &pipepb.Trigger{})
}
