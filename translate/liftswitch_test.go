package translate

import (
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// TestConvertDescriptor checks the twin descriptor differs from the stage's
// own only in its precombine, which converts instead, with the same
// CombineFn, input and output.
func TestConvertDescriptor(t *testing.T) {
	plan, err := Build(marshal(t, sumPerKeyPipeline()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ep := &pipepb.ApiServiceDescriptor{Url: "localhost:1"}
	var pre *Stage
	for _, s := range plan.Stages {
		switch {
		case len(s.Precombines) > 0:
			pre = s
		case s.Kind == KindSDK:
			if _, err := plan.ConvertDescriptor(s, ep); err == nil {
				t.Errorf("stage %s has no precombine, yet got a convert descriptor", s.ID)
			}
		}
	}
	if pre == nil || len(pre.Precombines) != 1 {
		t.Fatalf("want one stage with one precombine, got %+v", pre)
	}
	pc := pre.Precombines[0]
	tr := plan.Components.Transforms[pc.Transform]
	if tr.GetSpec().GetUrn() != URNCombinePGBKCV || tr.GetInputs()["in"] != pc.Input || tr.GetOutputs()["out"] != pc.Output {
		t.Fatalf("precombine %+v does not match its transform %v", pc, tr)
	}
	own, err := plan.Descriptor(pre, ep)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := plan.ConvertDescriptor(pre, ep)
	if err != nil {
		t.Fatal(err)
	}
	if conv.GetId() == own.GetId() {
		t.Errorf("convert descriptor shares the id %q", own.GetId())
	}
	if len(conv.GetTransforms()) != len(own.GetTransforms()) {
		t.Fatalf("convert descriptor has %d transforms, own %d", len(conv.GetTransforms()), len(own.GetTransforms()))
	}
	for id, ot := range own.GetTransforms() {
		ct := conv.GetTransforms()[id]
		if id != pc.Transform {
			if !proto.Equal(ct, ot) {
				t.Errorf("transform %s differs: %v vs %v", id, ct, ot)
			}
			continue
		}
		if ct.GetSpec().GetUrn() != URNCombineConvert {
			t.Errorf("precombine runs %s in the convert descriptor", ct.GetSpec().GetUrn())
		}
		if string(ct.GetSpec().GetPayload()) != string(ot.GetSpec().GetPayload()) ||
			ct.GetInputs()["in"] != pc.Input || ct.GetOutputs()["out"] != pc.Output {
			t.Errorf("convert step %v does not keep the precombine's CombineFn, input and output %v", ct, ot)
		}
	}
	// The stage's own descriptor still precombines.
	if u := own.GetTransforms()[pc.Transform].GetSpec().GetUrn(); u != URNCombinePGBKCV {
		t.Errorf("own descriptor's precombine became %s", u)
	}
}

// TestNoConvertUnderSlidingWindows: a precombine of sliding windows is not
// offered for conversion, and one of fixed windows is.
func TestNoConvertUnderSlidingWindows(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   *window.Fn
		want int
	}{
		{"fixed", window.NewFixedWindows(time.Minute), 1},
		{"sliding", window.NewSlidingWindows(time.Minute, 5*time.Minute), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			kvs := beam.ParDo(s, func(x int) (string, int) { return "k", x }, beam.Create(s, 1, 2, 3))
			stats.SumPerKey(s, beam.WindowInto(s, tc.fn, kvs))
			plan, err := Build(marshal(t, p), Options{})
			if err != nil {
				t.Fatal(err)
			}
			n, lifted := 0, 0
			for _, st := range plan.Stages {
				n += len(st.Precombines)
				for _, id := range st.Transforms {
					if plan.Components.Transforms[id].GetSpec().GetUrn() == URNCombinePGBKCV {
						lifted++
					}
				}
			}
			if lifted != 1 {
				t.Fatalf("%d precombine steps, want the combine lifted", lifted)
			}
			if n != tc.want {
				t.Errorf("%d precombines offered for conversion, want %d", n, tc.want)
			}
		})
	}
}
