package pgsink_test

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/connector/connectortest"
	"github.com/weir-runner/weir/pgio"
	"github.com/weir-runner/weir/pgsink"
)

type tagged struct {
	Key  string   `beam:"key"`
	Tags []string `beam:"tags"`
}

func pgPipeline(t *testing.T) *pipepb.Pipeline {
	return connectortest.Pipeline(t, func(s beam.Scope) {
		pgio.Write(s, pgio.WriteConfig{Connection: "postgres://db/x", Table: "counts"},
			beam.Create(s, windowCount{WindowStart: 1, N: 2}))
	})
}

// TestPostgresWriteStage: a PostgreSQL write becomes a runner stage of its
// own that keeps its staged rows in the store.
func TestPostgresWriteStage(t *testing.T) {
	plan, err := connectortest.Build(t, pgPipeline(t), pgsink.Connector{})
	if err != nil {
		t.Fatal(err)
	}
	natives := connectortest.Natives(plan)
	if len(natives) != 1 || natives[0].URN != pgio.WriteURN || len(natives[0].Inputs) != 1 {
		t.Fatalf("native stages %+v, want the PostgreSQL write", natives)
	}
	if !natives[0].Native.Placement().Store {
		t.Error("a PostgreSQL write keeps no state in the store")
	}
}

// TestPostgresWriteRefused: what the sink cannot write fails at
// submission, every problem at once, naming the transform and URN.
func TestPostgresWriteRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      func(t *testing.T) *pipepb.Pipeline
		change func(p *pipepb.Pipeline)
		want   []string
	}{
		{"payload", pgPipeline, func(p *pipepb.Pipeline) {
			_, tr := connectortest.Find(p, pgio.WriteURN)
			tr.Spec.Payload = []byte(`{"connection": "c", "table": "a.b.c", "mode": "upsert"}`)
		}, []string{"pgio.Write", pgio.WriteURN, "want name or schema.name", "needs key columns"}},
		{"connection string", pgPipeline, func(p *pipepb.Pipeline) {
			_, tr := connectortest.Find(p, pgio.WriteURN)
			tr.Spec.Payload = []byte(`{"connection": "postgres://u:secret@h:notaport/db", "table": "t"}`)
		}, []string{pgio.WriteURN, "connection: cannot parse", "xxxxx"}},
		{"not rows", pgPipeline, func(p *pipepb.Pipeline) {
			_, tr := connectortest.Find(p, pgio.WriteURN)
			p.Components.Coders["b"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:bytes:v1"}}
			p.Components.Pcollections[connectortest.Only(tr.Inputs)].CoderId = "b"
		}, []string{pgio.WriteURN, "the input's coder is beam:coder:bytes:v1, not a schema row"}},
		{"array field", func(t *testing.T) *pipepb.Pipeline {
			return connectortest.Pipeline(t, func(s beam.Scope) {
				pgio.Write(s, pgio.WriteConfig{Connection: "c", Table: "t"}, beam.Create(s, tagged{Key: "a"}))
			})
		}, nil, []string{pgio.WriteURN, `field "tags": array fields are not supported`}},
		{"output read", pgPipeline, func(p *pipepb.Pipeline) {
			id, tr := connectortest.Find(p, pgio.WriteURN)
			p.Components.Pcollections["written"] = proto.Clone(p.Components.Pcollections[connectortest.Only(tr.Inputs)]).(*pipepb.PCollection)
			tr.Outputs = map[string]string{"out": "written"}
			reader := proto.Clone(tr).(*pipepb.PTransform)
			reader.UniqueName, reader.Inputs, reader.Outputs = "reader", map[string]string{"in": "written"}, nil
			p.Components.Transforms[id+"_reader"] = reader
			p.RootTransformIds = append(p.RootTransformIds, id+"_reader")
		}, []string{pgio.WriteURN, `is read by transform "reader"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p(t)
			if tc.change != nil {
				tc.change(p)
			}
			_, err := connectortest.Build(t, p, pgsink.Connector{})
			if err == nil {
				t.Fatal("built")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the password:\n%v", err)
			}
		})
	}
}
