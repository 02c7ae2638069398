package filesink

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/connector/connectortest"
	"github.com/weir-runner/weir/fileio"
)

func filePipeline(t *testing.T) *pipepb.Pipeline {
	return connectortest.Pipeline(t, func(s beam.Scope) {
		fileio.Write(s, fileio.WriteConfig{Dir: "/out", Suffix: ".txt"}, beam.Create(s, []byte("a"), []byte("b")))
	})
}

// TestFileWriteStage: a file write becomes a runner stage of its own with
// its configuration, keeping its pending files in the store, its folder
// one a confined server checks.
func TestFileWriteStage(t *testing.T) {
	plan, err := connectortest.Build(t, filePipeline(t), Connector{})
	if err != nil {
		t.Fatal(err)
	}
	last := plan.Stages[len(plan.Stages)-1]
	st, ok := last.Native.(*stage)
	if !ok || st.cfg.Dir != "/out" || st.cfg.Suffix != ".txt" || len(last.Inputs) != 1 || len(last.Outputs) != 0 || last.URN != fileio.WriteURN {
		t.Fatalf("last stage %v %+v, want the file write", last.Kind, last)
	}
	if !st.Placement().Store {
		t.Error("a file write keeps no state in the store")
	}
	_, tr := connectortest.Find(filePipeline(t), fileio.WriteURN)
	if paths, err := (Connector{}).Paths(&connector.Transform{Proto: tr}); err != nil || paths["dir"] != "/out" {
		t.Errorf("paths of the file write: %v, %v", paths, err)
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
			_, tr := connectortest.Find(p, fileio.WriteURN)
			tr.Spec.Payload = []byte(`{"prefix": "a/b"}`)
		}, []string{"fileio.Write", fileio.WriteURN, "no dir", "path separator"}},
		{"input coder", func(p *pipepb.Pipeline) {
			_, tr := connectortest.Find(p, fileio.WriteURN)
			pc := p.Components.Pcollections[connectortest.Only(tr.Inputs)]
			p.Components.Coders["vi"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:varint:v1"}}
			pc.CoderId = "vi"
		}, []string{fileio.WriteURN, "not bytes or string"}},
		{"outputs", func(p *pipepb.Pipeline) {
			_, tr := connectortest.Find(p, fileio.WriteURN)
			p.Components.Pcollections["extra"] = proto.Clone(p.Components.Pcollections[connectortest.Only(tr.Inputs)]).(*pipepb.PCollection)
			tr.Outputs = map[string]string{"out": "extra"}
		}, []string{fileio.WriteURN, "a file write needs one input and no outputs, has 1 and 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filePipeline(t)
			tc.change(p)
			_, err := connectortest.Build(t, p, Connector{})
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
