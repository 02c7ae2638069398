package translate

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/kafkaio"
)

func kvIdentity(k, v []byte) ([]byte, []byte) { return k, v }

func kafkaPipeline(t *testing.T) *pipepb.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	recs := kafkaio.Read(s, kafkaio.ReadConfig{BootstrapServers: []string{"localhost:9092"}, Topics: []string{"in"}, MaxRecords: 10})
	kafkaio.Write(s, kafkaio.WriteConfig{BootstrapServers: []string{"localhost:9092"}, Topic: "out"}, beam.ParDo(s, kvIdentity, recs))
	return marshal(t, p)
}

// TestKafkaStages checks a Kafka read and write become runner stages of
// their own, with their decoded configurations, around the SDK stage.
func TestKafkaStages(t *testing.T) {
	plan, err := Build(kafkaPipeline(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, s := range plan.Stages {
		kinds = append(kinds, s.Kind.String())
		switch s.Kind {
		case KindKafkaRead:
			if s.KafkaRead == nil || s.KafkaRead.Topics[0] != "in" || s.KafkaRead.MaxRecords != 10 || len(s.Outputs) != 1 || len(s.Inputs) != 0 {
				t.Errorf("read stage %+v", s)
			}
		case KindKafkaWrite:
			if s.KafkaWrite == nil || s.KafkaWrite.Topic != "out" || len(s.Inputs) != 1 || len(s.Outputs) != 0 {
				t.Errorf("write stage %+v", s)
			}
		}
	}
	if got := strings.Join(kinds, " "); got != "kafka_read sdk kafka_write" {
		t.Errorf("stages %s, want kafka_read sdk kafka_write", got)
	}
}

// TestKafkaRefused checks the submission errors name the transform and say
// what is wrong: coders other than KV<bytes, bytes>, bad payloads.
func TestKafkaRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(p *pipepb.Pipeline)
		want   []string
	}{
		{"read output coder", func(p *pipepb.Pipeline) {
			_, tr := find(p, kafkaio.ReadURN)
			pc := p.Components.Pcollections[tr.Outputs[sortedKeys(tr.Outputs)[0]]]
			p.Components.Coders["strcoder"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:string_utf8:v1"}}
			p.Components.Coders["kvstr"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"strcoder", "strcoder"}}
			pc.CoderId = "kvstr"
		}, []string{`kafkaio.Read`, kafkaio.ReadURN, "not KV<bytes, bytes>", "beam:coder:kv:v1<beam:coder:string_utf8:v1, beam:coder:string_utf8:v1>"}},
		{"read payload", func(p *pipepb.Pipeline) {
			_, tr := find(p, kafkaio.ReadURN)
			tr.Spec.Payload = []byte(`{"topics": ["in"], "start": "yesterday"}`)
		}, []string{kafkaio.ReadURN, "no bootstrap servers", `unknown start "yesterday"`}},
		{"write payload", func(p *pipepb.Pipeline) {
			_, tr := find(p, kafkaio.WriteURN)
			tr.Spec.Payload = []byte(`not json`)
		}, []string{`kafkaio.Write`, kafkaio.WriteURN, "kafka write payload"}},
		{"with metadata", func(p *pipepb.Pipeline) {
			_, tr := find(p, kafkaio.ReadURN)
			tr.Spec.Payload = []byte(`{"bootstrap_servers": ["x"], "topics": ["in"], "with_metadata": true}`)
		}, []string{kafkaio.ReadURN, "beam:coder:kv:v1", "not a row of Kafka records (with_metadata)"}},
		{"with metadata, another row", func(p *pipepb.Pipeline) {
			_, tr := find(p, kafkaio.ReadURN)
			tr.Spec.Payload = []byte(`{"bootstrap_servers": ["x"], "topics": ["in"], "with_metadata": true}`)
			s := kafkaio.MetadataSchema()
			s.Fields = s.Fields[:8]
			metadataOutput(t, p, tr, s)
		}, []string{kafkaio.ReadURN, "not of Kafka records", "8 fields, want 9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := kafkaPipeline(t)
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

// metadataOutput gives the read tr's output a row coder of schema s.
func metadataOutput(t *testing.T, p *pipepb.Pipeline, tr *pipepb.PTransform, s *pipepb.Schema) {
	t.Helper()
	b, err := proto.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	p.Components.Coders["rows"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:row:v1", Payload: b}}
	p.Components.Pcollections[tr.Outputs[sortedKeys(tr.Outputs)[0]]].CoderId = "rows"
}

// TestKafkaWithMetadata: a read with metadata whose output is a row of
// kafkaio.MetadataSchema (as weir's expansion service makes it, schema id
// aside) is a Kafka read stage.
func TestKafkaWithMetadata(t *testing.T) {
	p := kafkaPipeline(t)
	_, tr := find(p, kafkaio.ReadURN)
	tr.Spec.Payload = []byte(`{"bootstrap_servers": ["x"], "topics": ["in"], "with_metadata": true, "max_records": 3}`)
	s := kafkaio.MetadataSchema()
	s.Id = "another-id"
	metadataOutput(t, p, tr, s)
	plan, err := Build(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range plan.Stages {
		if st.Kind == KindKafkaRead && !st.KafkaRead.WithMetadata {
			t.Errorf("read stage %+v lost with_metadata", st.KafkaRead)
		}
	}
}

func find(p *pipepb.Pipeline, urn string) (string, *pipepb.PTransform) {
	for id, tr := range p.Components.Transforms {
		if tr.GetSpec().GetUrn() == urn {
			return id, tr
		}
	}
	return "", nil
}
