package kafka

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/connector/connectortest"
	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/translate"
)

func kvIdentity(k, v []byte) ([]byte, []byte) { return k, v }

func init() { beam.RegisterFunction(kvIdentity) }

func kafkaPipeline(t *testing.T) *pipepb.Pipeline {
	return connectortest.Pipeline(t, func(s beam.Scope) {
		recs := kafkaio.Read(s, kafkaio.ReadConfig{BootstrapServers: []string{"localhost:9092"}, Topics: []string{"in"}, MaxRecords: 10})
		kafkaio.Write(s, kafkaio.WriteConfig{BootstrapServers: []string{"localhost:9092"}, Topic: "out"}, beam.ParDo(s, kvIdentity, recs))
	})
}

func buildKafka(t *testing.T, p *pipepb.Pipeline) (*translate.Plan, error) {
	return connectortest.Build(t, p, ReadConnector{}, WriteConnector{})
}

// TestKafkaStages checks a Kafka read and write become runner stages of
// their own, with their decoded configurations, around the SDK stage.
func TestKafkaStages(t *testing.T) {
	plan, err := buildKafka(t, kafkaPipeline(t))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, s := range plan.Stages {
		kinds = append(kinds, s.Kind.String())
		switch c := s.Native.(type) {
		case *readStage:
			if c.cfg.Topics[0] != "in" || c.cfg.MaxRecords != 10 || len(s.Outputs) != 1 || len(s.Inputs) != 0 || s.URN != kafkaio.ReadURN {
				t.Errorf("read stage %+v", s)
			}
			if c.Placement().Parallelism != 1 || c.Placement().Store {
				t.Errorf("read placement %+v, want one subtask", c.Placement())
			}
		case *writeStage:
			if c.cfg.Topic != "out" || len(s.Inputs) != 1 || len(s.Outputs) != 0 || s.URN != kafkaio.WriteURN {
				t.Errorf("write stage %+v", s)
			}
			if c.Placement().Store {
				t.Errorf("an at-least-once write keeps state in the store")
			}
		}
	}
	if got := strings.Join(kinds, " "); got != "native sdk native" {
		t.Errorf("stages %s, want native sdk native", got)
	}
}

// TestKafkaExactlyOncePlacement: an exactly-once write keeps its records
// in the store.
func TestKafkaExactlyOncePlacement(t *testing.T) {
	p := connectortest.Pipeline(t, func(s beam.Scope) {
		recs := kafkaio.Read(s, kafkaio.ReadConfig{BootstrapServers: []string{"x"}, Topics: []string{"in"}, MaxRecords: 1})
		kafkaio.Write(s, kafkaio.WriteConfig{BootstrapServers: []string{"x"}, Topic: "out", Semantic: kafkaio.ExactlyOnce}, recs)
	})
	plan, err := buildKafka(t, p)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := plan.Stages[len(plan.Stages)-1].Native.(*writeStage)
	if !ok || !w.cfg.IsExactlyOnce() || !w.Placement().Store {
		t.Errorf("last stage %+v, want an exactly-once Kafka write that keeps state", plan.Stages[len(plan.Stages)-1])
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
			_, tr := connectortest.Find(p, kafkaio.ReadURN)
			pc := p.Components.Pcollections[connectortest.Only(tr.Outputs)]
			p.Components.Coders["strcoder"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:string_utf8:v1"}}
			p.Components.Coders["kvstr"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"strcoder", "strcoder"}}
			pc.CoderId = "kvstr"
		}, []string{`kafkaio.Read`, kafkaio.ReadURN, "not KV<bytes, bytes>", "beam:coder:kv:v1<beam:coder:string_utf8:v1, beam:coder:string_utf8:v1>"}},
		{"read payload", func(p *pipepb.Pipeline) {
			_, tr := connectortest.Find(p, kafkaio.ReadURN)
			tr.Spec.Payload = []byte(`{"topics": ["in"], "start": "yesterday"}`)
		}, []string{kafkaio.ReadURN, "no bootstrap servers", `unknown start "yesterday"`}},
		{"write payload", func(p *pipepb.Pipeline) {
			_, tr := connectortest.Find(p, kafkaio.WriteURN)
			tr.Spec.Payload = []byte(`not json`)
		}, []string{`kafkaio.Write`, kafkaio.WriteURN, "kafka write payload"}},
		{"write semantic", func(p *pipepb.Pipeline) {
			_, tr := connectortest.Find(p, kafkaio.WriteURN)
			tr.Spec.Payload = []byte(`{"bootstrap_servers": ["x"], "topic": "t", "semantic": "twice"}`)
		}, []string{kafkaio.WriteURN, `unknown semantic "twice"`}},
		{"write output read", func(p *pipepb.Pipeline) {
			_, w := connectortest.Find(p, kafkaio.WriteURN)
			_, r := connectortest.Find(p, kafkaio.ReadURN)
			p.Components.Pcollections["written"] = proto.Clone(p.Components.Pcollections[connectortest.Only(r.Outputs)]).(*pipepb.PCollection)
			w.Outputs = map[string]string{"out": "written"}
			p.Components.Transforms["reader"] = &pipepb.PTransform{UniqueName: "reader", Inputs: map[string]string{"in": "written"}}
		}, []string{kafkaio.WriteURN, "but a Kafka write outputs nothing"}},
		{"with metadata", func(p *pipepb.Pipeline) {
			_, tr := connectortest.Find(p, kafkaio.ReadURN)
			tr.Spec.Payload = []byte(`{"bootstrap_servers": ["x"], "topics": ["in"], "with_metadata": true}`)
		}, []string{kafkaio.ReadURN, "beam:coder:kv:v1", "not a row of Kafka records (with_metadata)"}},
		{"with metadata, another row", func(p *pipepb.Pipeline) {
			_, tr := connectortest.Find(p, kafkaio.ReadURN)
			tr.Spec.Payload = []byte(`{"bootstrap_servers": ["x"], "topics": ["in"], "with_metadata": true}`)
			s := kafkaio.MetadataSchema()
			s.Fields = s.Fields[:8]
			metadataOutput(t, p, tr, s)
		}, []string{kafkaio.ReadURN, "not of Kafka records", "8 fields, want 9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := kafkaPipeline(t)
			tc.change(p)
			_, err := buildKafka(t, p)
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
	p.Components.Pcollections[connectortest.Only(tr.Outputs)].CoderId = "rows"
}

// TestKafkaWithMetadata: a read with metadata whose output is a row of
// kafkaio.MetadataSchema (as weir's expansion service makes it, schema id
// aside) is a Kafka read stage.
func TestKafkaWithMetadata(t *testing.T) {
	p := kafkaPipeline(t)
	_, tr := connectortest.Find(p, kafkaio.ReadURN)
	tr.Spec.Payload = []byte(`{"bootstrap_servers": ["x"], "topics": ["in"], "with_metadata": true, "max_records": 3}`)
	s := kafkaio.MetadataSchema()
	s.Id = "another-id"
	metadataOutput(t, p, tr, s)
	plan, err := buildKafka(t, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range plan.Stages {
		if r, ok := st.Native.(*readStage); ok && !r.cfg.WithMetadata {
			t.Errorf("read stage %+v lost with_metadata", r.cfg)
		}
	}
}

// TestKafkaUnknownWithoutConnectors: without the Kafka connectors the
// same pipeline is refused, naming the URNs: translate knows no Kafka.
func TestKafkaUnknownWithoutConnectors(t *testing.T) {
	_, err := connectortest.Build(t, kafkaPipeline(t))
	if err == nil || !strings.Contains(err.Error(), kafkaio.ReadURN+"): transform URN is not supported") {
		t.Errorf("Build without connectors = %v, want the read refused", err)
	}
}

// fakeJob is the connector.Job of a read stage built outside a runner.
type fakeJob struct{ shared map[any]any }

func (j *fakeJob) Warnf(string, ...any)   {}
func (j *fakeJob) Retried() func(error)   { return func(error) {} }
func (j *fakeJob) Checkpoints() bool      { return true }
func (j *fakeJob) Drain() <-chan struct{} { return nil }
func (j *fakeJob) Shared(key any, make func() any) any {
	if j.shared[key] == nil {
		j.shared[key] = make()
	}
	return j.shared[key]
}
func (j *fakeJob) AddMetrics(func() []*pipepb.MonitoringInfo) {}
func (j *fakeJob) AddSplits(connector.SplitReporter)          {}

// TestReadPlacement: the read runs as its configured parallelism (one by
// default), each subtask's source reading its share of the partitions;
// the subtasks of one run of the graph share one budget of max_records,
// and a new run (a restart) gets a new one. A negative parallelism is
// refused.
func TestReadPlacement(t *testing.T) {
	sources := func(cfg *kafkaio.ReadConfig, subs ...int) (connector.Placement, []*Source) {
		t.Helper()
		stage := &readStage{cfg: cfg}
		node, err := stage.Build(&connector.BuildContext{Stage: "read", Transform: "t1", Job: &fakeJob{shared: map[any]any{}}})
		if err != nil {
			t.Fatal(err)
		}
		var out []*Source
		for _, sub := range subs {
			src, err := node.NewSource(sub, nil)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, src.(*Source))
		}
		return stage.Placement(), out
	}
	one, srcs := sources(&kafkaio.ReadConfig{Topics: []string{"in"}}, 0)
	if one.Parallelism != 1 || srcs[0].Options.Assign != (Assignment{}) || srcs[0].Options.Budget != nil {
		t.Errorf("default: placement %+v, options %+v", one, srcs[0].Options)
	}
	three, srcs := sources(&kafkaio.ReadConfig{Topics: []string{"in"}, Parallelism: 3, MaxRecords: 10}, 0, 1, 2, 0, 1, 2)
	if three.Parallelism != 3 {
		t.Errorf("parallelism 3: placement %+v", three)
	}
	for i, s := range srcs {
		if want := (Assignment{Index: i % 3, Of: 3}); s.Options.Assign != want {
			t.Errorf("source %d reads %+v, want %+v", i, s.Options.Assign, want)
		}
	}
	if b := srcs[0].Options.Budget; b == nil || srcs[1].Options.Budget != b || srcs[2].Options.Budget != b {
		t.Error("the subtasks of one run do not share a budget")
	}
	if srcs[3].Options.Budget == srcs[0].Options.Budget || srcs[4].Options.Budget != srcs[3].Options.Budget {
		t.Error("a second run of the graph does not get a budget of its own")
	}
	// The job's source parallelism applies where the read sets none.
	jobs := &readStage{cfg: &kafkaio.ReadConfig{Topics: []string{"in"}}}
	jobs.DefaultParallelism(4)
	own := &readStage{cfg: &kafkaio.ReadConfig{Topics: []string{"in"}, Parallelism: 2}}
	own.DefaultParallelism(4)
	if got := jobs.Placement().Parallelism; got != 4 {
		t.Errorf("no parallelism of its own, job's 4: placement %d", got)
	}
	if got := own.Placement().Parallelism; got != 2 {
		t.Errorf("its own parallelism 2, job's 4: placement %d", got)
	}
	if _, err := kafkaio.DecodeRead([]byte(`{"bootstrap_servers":["x"],"topics":["in"],"parallelism":-1}`)); err == nil ||
		!strings.Contains(err.Error(), "parallelism") {
		t.Errorf("parallelism -1: %v", err)
	}
}
