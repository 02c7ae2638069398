package translate

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/apache/beam/sdks/v2/go/test/integration/primitives"
)

// scoped turns a pipeline-building function into a pipeline constructor.
func scoped(f func(beam.Scope)) func() *beam.Pipeline {
	return func() *beam.Pipeline {
		p, s := beam.NewPipelineWithRoot()
		f(s)
		return p
	}
}

func marshal(t testing.TB, p *beam.Pipeline) *pipepb.Pipeline {
	t.Helper()
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	env, err := graphx.CreateEnvironment(context.Background(), "beam:env:external:v1",
		func(context.Context) string { return "localhost:1" })
	if err != nil {
		t.Fatal(err)
	}
	pp, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	if err != nil {
		t.Fatal(err)
	}
	return pp
}

// TestPlanShape checks the invariants the executor relies on, over Beam's
// own test pipelines: stages in topological order, every input a runner
// PCollection with a producer, side inputs never produced by a stage that
// depends on their reader, and the Go SDK's CoGBK expansion output never
// leaving its stage (only the SDK can encode it).
func TestPlanShape(t *testing.T) {
	pipelines := map[string]func() *beam.Pipeline{
		"CoGBK":             scoped(primitives.CoGBK),
		"MultiMapSideInput": primitives.ParDoMultiMapSideInput,
		"SideInput":         primitives.ParDoSideInput,
		"KVSideInput":       primitives.ParDoKVSideInput,
		"Flatten":           scoped(primitives.Flatten),
		"FlattenDup":        scoped(primitives.FlattenDup),
		"Reshuffle":         scoped(primitives.Reshuffle),
		"MultiOutput":       primitives.ParDoMultiOutput,
		"GBKShortRead":      scoped(primitives.GBKShortRead),
	}
	for name, build := range pipelines {
		t.Run(name, func(t *testing.T) {
			// Go map order varies between builds; translation must not.
			for range 20 {
				checkPlanShape(t, marshal(t, build()))
			}
		})
	}
}

func checkPlanShape(t *testing.T, pp *pipepb.Pipeline) {
	t.Helper()
	{
		{
			plan, err := Build(pp, Options{})
			if err != nil {
				t.Fatal(err)
			}
			pos := map[StageID]int{}
			for i, s := range plan.Stages {
				pos[s.ID] = i
			}
			for i, s := range plan.Stages {
				for _, in := range s.Inputs {
					pc, ok := plan.PColls[in.PColl]
					if !ok {
						t.Fatalf("stage %s reads %s, which is not a runner PCollection", s.ID, in.PColl)
					}
					if pos[pc.Producer] >= i {
						t.Errorf("stage %s (%d) reads %s from stage %s (%d), which does not come first",
							s.ID, i, in.PColl, pc.Producer, pos[pc.Producer])
					}
				}
			}
			for id, pc := range plan.PColls {
				c := plan.Components.Coders[plan.elementCoder(id)]
				for _, cc := range c.GetComponentCoderIds() {
					if strings.Contains(plan.Components.Coders[cc].GetSpec().GetUrn(), "cogbklist") {
						t.Errorf("PCollection %s (%s) crosses stages with a CoGBK coder", id, pc.Name)
					}
				}
			}
		}
	}
}

func wordLen(w string) int { return len(w) }

func atLeast(w string, mean float64, emit func(string)) {
	if float64(len(w)) >= mean {
		emit(w)
	}
}

func meanSideInputPipeline() *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	words := beam.CreateList(s, []string{"a", "the", "pjamas", "art", "candy", "garbage"})
	mean := stats.Mean(s, beam.ParDo(s, wordLen, words))
	above := beam.ParDo(s, atLeast, words, beam.SideInput{Input: mean})
	again := beam.ParDo(s, atLeast, words, beam.SideInput{Input: mean})
	passert.Equals(s, above, "pjamas", "candy", "garbage")
	passert.Equals(s, again, "pjamas", "candy", "garbage")
	return p
}

func TestUnsupportedNamesTransformAndURN(t *testing.T) {
	pp := marshal(t, scoped(primitives.CoGBK)())
	for _, tr := range pp.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() == URNGBK {
			tr.Spec.Urn = "beam:transform:bogus:v1"
			break
		}
	}
	_, err := Build(pp, Options{})
	if err == nil || !strings.Contains(err.Error(), "beam:transform:bogus:v1") || !strings.Contains(err.Error(), "CoGBK") {
		t.Fatalf("Build = %v, want an error naming the transform and its URN", err)
	}
}

func sumPerKeyPipeline() *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	kvs := beam.ParDo(s, func(x int) (string, int) { return "k", x }, beam.Create(s, 1, 2, 3))
	stats.SumPerKey(s, kvs)
	return p
}

// TestCombineLifting checks a combine-per-key runs as precombine (fused
// with its producer), a GroupByKey of accumulators, then merge and extract
// in one stage; and unlifted when asked.
func TestCombineLifting(t *testing.T) {
	pp := marshal(t, sumPerKeyPipeline())
	urns := func(plan *Plan, s *Stage) []string {
		var out []string
		for _, id := range s.Transforms {
			out = append(out, plan.Components.Transforms[id].GetSpec().GetUrn())
		}
		return out
	}
	plan, err := Build(pp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range plan.Stages {
		got = append(got, strings.Join(urns(plan, s), "+"))
	}
	want := []string{URNImpulse, URNParDo + "+" + URNParDo + "+" + URNCombinePGBKCV, URNGBK, URNCombineMerge + "+" + URNCombineExtract}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("lifted stages:\n got %v\nwant %v", got, want)
	}

	plan, err = Build(pp, Options{NoLift: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range plan.Stages {
		for _, u := range urns(plan, s) {
			if u == URNCombinePGBKCV || u == URNCombineMerge || u == URNCombineExtract {
				t.Errorf("NoLift plan has lifted step %s", u)
			}
		}
	}
}

// TestCombineLiftingUnderTriggers checks a combine lifts under every
// trigger that does not count elements, and stays unlifted under one that
// does, wherever in the tree the count is.
func TestCombineLiftingUnderTriggers(t *testing.T) {
	count := &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: 2}}}
	proc := &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterProcessingTime_{AfterProcessingTime: &pipepb.Trigger_AfterProcessingTime{
		TimestampTransforms: []*pipepb.TimestampTransform{{TimestampTransform: &pipepb.TimestampTransform_Delay_{Delay: &pipepb.TimestampTransform_Delay{DelayMillis: 1000}}}}}}}
	repeat := func(t *pipepb.Trigger) *pipepb.Trigger {
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_Repeat_{Repeat: &pipepb.Trigger_Repeat{Subtrigger: t}}}
	}
	early := func(t *pipepb.Trigger) *pipepb.Trigger {
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{EarlyFirings: t}}}
	}
	anyOf := func(ts ...*pipepb.Trigger) *pipepb.Trigger {
		return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterAny_{AfterAny: &pipepb.Trigger_AfterAny{Subtriggers: ts}}}
	}
	for _, tc := range []struct {
		name    string
		trigger *pipepb.Trigger
		lifted  bool
	}{
		{"default", &pipepb.Trigger{Trigger: &pipepb.Trigger_Default_{Default: &pipepb.Trigger_Default{}}}, true},
		{"repeated processing time", repeat(proc), true},
		{"early processing-time firings", early(repeat(proc)), true},
		{"element count", count, false},
		{"repeated element count", repeat(count), false},
		{"early count firings", early(count), false},
		{"count or processing time", repeat(anyOf(proc, count)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pp := marshal(t, sumPerKeyPipeline())
			for _, ws := range pp.GetComponents().GetWindowingStrategies() {
				ws.Trigger = tc.trigger
			}
			plan, err := Build(pp, Options{})
			if err != nil {
				t.Fatal(err)
			}
			lifted := false
			for _, tr := range plan.Components.GetTransforms() {
				lifted = lifted || tr.GetSpec().GetUrn() == URNCombinePGBKCV
			}
			if lifted != tc.lifted {
				t.Errorf("lifted = %v, want %v", lifted, tc.lifted)
			}
		})
	}
}
