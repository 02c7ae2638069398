package translate

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

func stableFirst(x []byte) []byte  { return x }
func stableSecond(x []byte) []byte { return x }

// TestStableInputStage: a ParDo that requires stable input starts a stage
// of its own (fusion breaks before it), marked StableInput; without the
// requirement the two ParDos fuse.
func TestStableInputStage(t *testing.T) {
	for _, stable := range []bool{false, true} {
		p, s := beam.NewPipelineWithRoot()
		beam.ParDo(s, stableSecond, beam.ParDo(s, stableFirst, beam.Create(s, []byte("a"))))
		pp := marshal(t, p)
		var second string
		for id, tr := range pp.Components.Transforms {
			if strings.Contains(tr.GetUniqueName(), "stableSecond") && tr.GetSpec().GetUrn() == URNParDo {
				second = id
				var pl pipepb.ParDoPayload
				if err := proto.Unmarshal(tr.Spec.Payload, &pl); err != nil {
					t.Fatal(err)
				}
				pl.RequiresStableInput = stable
				b, err := proto.Marshal(&pl)
				if err != nil {
					t.Fatal(err)
				}
				tr.Spec.Payload = b
			}
		}
		if second == "" {
			t.Fatal("no stableSecond ParDo in the pipeline")
		}
		plan, err := Build(pp, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got *Stage
		for _, st := range plan.Stages {
			if slices.Contains(st.Transforms, second) {
				got = st
			}
		}
		if stable && (got.Transforms[0] != second || !got.StableInput) {
			t.Errorf("stable: the ParDo is in stage %+v, want first in a StableInput stage", got)
		}
		if !stable && (got.Transforms[0] == second || got.StableInput) {
			t.Errorf("not stable: the ParDo is first in stage %+v, want it fused", got)
		}
	}
}
