package translate

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/kafkaio"
)

func filePipeline(t *testing.T) *pipepb.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	fileio.Write(s, fileio.WriteConfig{Dir: "/out", Suffix: ".txt"}, beam.Create(s, []byte("a"), []byte("b")))
	return marshal(t, p)
}

// TestFileWriteStage: a file write becomes a runner stage of its own with
// its configuration; an exactly-once Kafka write keeps its semantic.
func TestFileWriteStage(t *testing.T) {
	plan, err := Build(filePipeline(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	last := plan.Stages[len(plan.Stages)-1]
	if last.Kind != KindFileWrite || last.FileWrite == nil || last.FileWrite.Dir != "/out" || last.FileWrite.Suffix != ".txt" ||
		len(last.Inputs) != 1 || len(last.Outputs) != 0 {
		t.Errorf("last stage %v %+v, want the file write", last.Kind, last)
	}
	p, s := beam.NewPipelineWithRoot()
	recs := kafkaio.Read(s, kafkaio.ReadConfig{BootstrapServers: []string{"x"}, Topics: []string{"in"}, MaxRecords: 1})
	kafkaio.Write(s, kafkaio.WriteConfig{BootstrapServers: []string{"x"}, Topic: "out", Semantic: kafkaio.ExactlyOnce}, recs)
	plan, err = Build(marshal(t, p), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := plan.Stages[len(plan.Stages)-1]; w.Kind != KindKafkaWrite || !w.KafkaWrite.IsExactlyOnce() {
		t.Errorf("last stage %v %+v, want an exactly-once Kafka write", w.Kind, w.KafkaWrite)
	}
}

// TestFileWriteRefused: bad payloads and input coders other than bytes or
// string fail at submission, naming the transform.
func TestFileWriteRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(p *pipepb.Pipeline)
		want   []string
	}{
		{"no dir", func(p *pipepb.Pipeline) {
			_, tr := find(p, fileio.WriteURN)
			tr.Spec.Payload = []byte(`{"prefix": "a/b"}`)
		}, []string{"fileio.Write", fileio.WriteURN, "no dir", "path separator"}},
		{"input coder", func(p *pipepb.Pipeline) {
			_, tr := find(p, fileio.WriteURN)
			pc := p.Components.Pcollections[tr.Inputs[sortedKeys(tr.Inputs)[0]]]
			p.Components.Coders["vi"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:varint:v1"}}
			pc.CoderId = "vi"
		}, []string{fileio.WriteURN, "not bytes or string"}},
		{"kafka semantic", func(p *pipepb.Pipeline) {
			_, tr := find(p, fileio.WriteURN)
			tr.Spec.Urn = kafkaio.WriteURN
			tr.Spec.Payload = []byte(`{"bootstrap_servers": ["x"], "topic": "t", "semantic": "twice"}`)
		}, []string{`unknown semantic "twice"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filePipeline(t)
			tc.change(p)
			_, err := Build(p, Options{})
			if err == nil {
				t.Fatal("built")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

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
