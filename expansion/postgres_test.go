package expansion

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/pgio"
)

// pgPayload has the fields a Python ImplicitSchemaPayloadBuilder sends
// for a PostgreSQL write, spelled as Python spells them.
type pgPayload struct {
	Connection string            `beam:"connection"`
	Table      string            `beam:"table"`
	Mode       string            `beam:"mode"`
	Key        []string          `beam:"key"`
	Columns    map[string]string `beam:"columns"`
}

func rowComponents(t *testing.T, fields ...string) *pipepb.Components {
	s := &pipepb.Schema{Id: "s"}
	for _, f := range fields {
		s.Fields = append(s.Fields, &pipepb.Field{Name: f, Type: &pipepb.FieldType{
			TypeInfo: &pipepb.FieldType_AtomicType{AtomicType: pipepb.AtomicType_INT64}}})
	}
	b, err := proto.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return &pipepb.Components{
		Pcollections: map[string]*pipepb.PCollection{"n3": {UniqueName: "n3", CoderId: "row@ns1", WindowingStrategyId: "w0@ns1"}},
		Coders:       map[string]*pipepb.Coder{"row@ns1": {Spec: &pipepb.FunctionSpec{Urn: urnRowCoder, Payload: b}}},
	}
}

func TestPostgresWriteConfig(t *testing.T) {
	p := pgPayload{Connection: "postgres://db/x", Table: "s.sums", Mode: "upsert", Key: []string{"id"}, Columns: map[string]string{"n": "total"}}
	got, err := pgWriteConfig(PostgresWriteURN, beam.CrossLanguagePayload(p))
	if err != nil {
		t.Fatal(err)
	}
	want := pgio.WriteConfig{Connection: "postgres://db/x", Table: "s.sums", Mode: "upsert", Key: []string{"id"}, Columns: map[string]string{"n": "total"}}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("got %+v\nwant %+v", *got, want)
	}
}

func TestPostgresWriteConfigErrors(t *testing.T) {
	type extra struct {
		Connection string `beam:"connection"`
		Table      string `beam:"table"`
		BatchSize  int64  `beam:"batch_size"`
	}
	for _, c := range []struct {
		name    string
		payload []byte
		want    []string
	}{
		{"no table", beam.CrossLanguagePayload(pgPayload{Connection: "c"}), []string{"table: empty"}},
		{"upsert without key", beam.CrossLanguagePayload(pgPayload{Connection: "c", Table: "t", Mode: "upsert"}), []string{"needs key columns"}},
		{"unknown field", beam.CrossLanguagePayload(extra{Connection: "c", Table: "t", BatchSize: 5}), []string{"unknown field(s) batch_size"}},
	} {
		_, err := pgWriteConfig(PostgresWriteURN, c.payload)
		for _, w := range append(c.want, PostgresWriteURN) {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want one holding %q", c.name, err, w)
			}
		}
	}
}

func TestExpandPostgresWrite(t *testing.T) {
	p := pgPayload{Connection: "postgres://db/x", Table: "sums", Mode: "upsert", Key: []string{"id"}}
	res := expandOK(t, goRequest(PostgresWriteURN, beam.CrossLanguagePayload(p), map[string]string{"i0": "n3"}, rowComponents(t, "id", "n")))
	comp := res.GetTransform()
	if len(comp.GetOutputs()) != 0 || len(comp.GetSubtransforms()) != 1 {
		t.Fatalf("expanded into %v outputs and %v parts, want a composite of one primitive with no outputs", comp.GetOutputs(), comp.GetSubtransforms())
	}
	tr := res.GetComponents().GetTransforms()[comp.GetSubtransforms()[0]]
	if tr.GetSpec().GetUrn() != pgio.WriteURN || tr.GetInputs()["i0"] != "n3" {
		t.Fatalf("primitive %s with inputs %v, want %s on n3", tr.GetSpec().GetUrn(), tr.GetInputs(), pgio.WriteURN)
	}
	cfg, err := pgio.DecodeWrite(tr.GetSpec().GetPayload())
	if err != nil || cfg.Table != "sums" || !cfg.IsUpsert() {
		t.Errorf("payload decodes to %+v, %v", cfg, err)
	}
}

func TestExpandPostgresWriteRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		p     pgPayload
		comps *pipepb.Components
		want  string
	}{
		{"not rows", pgPayload{Connection: "c", Table: "t"}, kvComponents(urnBytesCoder), "want schema rows"},
		{"key not a field", pgPayload{Connection: "c", Table: "t", Mode: "upsert", Key: []string{"nope"}}, rowComponents(t, "id"), `key column "nope" is not written`},
	} {
		res, err := quietService().Expand(context.Background(), goRequest(PostgresWriteURN, beam.CrossLanguagePayload(c.p), map[string]string{"i0": "n3"}, c.comps))
		if err != nil || !strings.Contains(res.GetError(), c.want) {
			t.Errorf("%s: error %q (%v), want one holding %q", c.name, res.GetError(), err, c.want)
		}
	}
}
