package translate

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// TestRefusesBadWindowing checks that a windowing strategy with a negative
// allowed lateness, a trigger with a negative delay, or a window function
// or window coder weir does not know, fails at submission with an error
// that names the grouping transform.
func TestRefusesBadWindowing(t *testing.T) {
	build := func(s beam.Scope) {
		kv := beam.AddFixedKey(s, beam.Create(s, 1, 2, 3))
		beam.GroupByKey(s.Scope("Group"), kv)
	}
	negDelay := &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterProcessingTime_{AfterProcessingTime: &pipepb.Trigger_AfterProcessingTime{
		TimestampTransforms: []*pipepb.TimestampTransform{{TimestampTransform: &pipepb.TimestampTransform_Delay_{
			Delay: &pipepb.TimestampTransform_Delay{DelayMillis: -1000}}}}}}}
	lateDelay := &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{
		LateFirings: negDelay}}}
	for name, tc := range map[string]struct {
		edit func(*pipepb.WindowingStrategy)
		want string
	}{
		"negative lateness":      {func(ws *pipepb.WindowingStrategy) { ws.AllowedLateness = -5000 }, "allowed lateness -5000 ms is negative"},
		"negative delay":         {func(ws *pipepb.WindowingStrategy) { ws.Trigger = negDelay }, "delay -1000 ms is negative"},
		"negative delay, nested": {func(ws *pipepb.WindowingStrategy) { ws.Trigger = lateDelay }, "delay -1000 ms is negative"},
		"unknown merging window function": {func(ws *pipepb.WindowingStrategy) {
			ws.WindowFn = &pipepb.FunctionSpec{Urn: "example:window_fn:calendar_months:v1"}
			ws.MergeStatus = pipepb.MergeStatus_NEEDS_MERGE
		}, "merging window function example:window_fn:calendar_months:v1 is not supported"},
		"unknown window coder": {func(ws *pipepb.WindowingStrategy) { ws.WindowCoderId = "calendar_month_coder" },
			`window coder calendar_month_coder ("") is not supported`},
	} {
		t.Run(name, func(t *testing.T) {
			pp := marshal(t, scoped(build)())
			for _, ws := range pp.GetComponents().GetWindowingStrategies() {
				tc.edit(ws)
			}
			_, err := Build(pp, Options{})
			if err == nil {
				t.Fatal("Build accepted the pipeline")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Group/") {
				t.Errorf("error %q does not name the grouping transform and say %q", err, tc.want)
			}
		})
	}
}

// TestCustomWindowFn: a window function weir does not know, in windows
// of a coder it does (Python's pickled window functions over interval
// windows), is grouped when it does not merge: the SDK assigns the windows.
func TestCustomWindowFn(t *testing.T) {
	pp := marshal(t, scoped(func(s beam.Scope) {
		kv := beam.AddFixedKey(s, beam.Create(s, 1, 2, 3))
		beam.GroupByKey(s.Scope("Group"), kv)
	})())
	for _, ws := range pp.GetComponents().GetWindowingStrategies() {
		ws.WindowFn = &pipepb.FunctionSpec{Urn: "beam:window_fn:pickled_python:v1", Payload: []byte("opaque")}
		ws.MergeStatus = pipepb.MergeStatus_NON_MERGING
	}
	if _, err := Build(pp, Options{}); err != nil {
		t.Fatalf("Build refused a non-merging custom window function: %v", err)
	}
}

// TestSessionsWithTriggers: session windows with a trigger other than the
// default, or with allowed lateness, run the triggered group, told that its
// windows merge; with neither they stay on the default path.
func TestSessionsWithTriggers(t *testing.T) {
	build := func(s beam.Scope) {
		kv := beam.AddFixedKey(s, beam.Create(s, 1, 2, 3))
		beam.GroupByKey(s.Scope("Group"), kv)
	}
	early := &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{
		EarlyFirings: &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: 2}}}}}}
	for name, tc := range map[string]struct {
		trigger   *pipepb.Trigger
		lateness  int64
		triggered bool
	}{
		"early firings":        {early, 0, true},
		"allowed lateness":     {nil, 1000, true},
		"default, no lateness": {nil, 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			pp := marshal(t, scoped(build)())
			for _, ws := range pp.GetComponents().GetWindowingStrategies() {
				ws.WindowFn = &pipepb.FunctionSpec{Urn: URNSessions}
				ws.MergeStatus = pipepb.MergeStatus_NEEDS_MERGE
				ws.Trigger, ws.AllowedLateness = tc.trigger, tc.lateness
			}
			plan, err := Build(pp, Options{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, s := range plan.Stages {
				if s.Kind == KindGBK {
					found = true
					if !s.Merging || s.Triggered != tc.triggered {
						t.Errorf("stage %s: merging %v triggered %v, want true and %v", s.Name, s.Merging, s.Triggered, tc.triggered)
					}
				}
			}
			if !found {
				t.Fatal("no group-by-key stage")
			}
		})
	}
}

// TestRefusesMultimapState: a ParDo with a multimap state cell fails at
// submission, naming the transform and the state.
func TestRefusesMultimapState(t *testing.T) {
	pp := marshal(t, scoped(func(s beam.Scope) {
		beam.ParDo(s.Scope("Stateful"), wordLen, beam.Create(s, "a", "bb"))
	})())
	found := false
	for _, tr := range pp.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() != URNParDo || !strings.HasPrefix(tr.GetUniqueName(), "Stateful/") {
			continue
		}
		var pd pipepb.ParDoPayload
		if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pd); err != nil {
			t.Fatal(err)
		}
		pd.StateSpecs = map[string]*pipepb.StateSpec{"tags": {Spec: &pipepb.StateSpec_MultimapSpec{
			MultimapSpec: &pipepb.MultimapStateSpec{KeyCoderId: "c0", ValueCoderId: "c0"}}}}
		b, err := proto.Marshal(&pd)
		if err != nil {
			t.Fatal(err)
		}
		tr.Spec.Payload, found = b, true
	}
	if !found {
		t.Fatal("no ParDo under Stateful/")
	}
	_, err := Build(pp, Options{})
	if err == nil || !strings.Contains(err.Error(), "Stateful/") || !strings.Contains(err.Error(), "state tags is multimap state") {
		t.Fatalf("Build: %v, want a refusal naming Stateful/ and state tags", err)
	}
}
