package expansion

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/kafkaio"
)

func quietService() *Service {
	return NewService(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// goRequest is an expansion request shaped like the Go SDK's: the
// components hold the Go environment and the inputs' PCollections with
// coders renamed into the namespace.
func goRequest(urn string, payload []byte, inputs map[string]string, comps *pipepb.Components) *jobpb.ExpansionRequest {
	if comps == nil {
		comps = &pipepb.Components{}
	}
	comps.Environments = map[string]*pipepb.Environment{"go": {Urn: "beam:env:docker:v1"}}
	return &jobpb.ExpansionRequest{
		Components: comps,
		Transform: &pipepb.PTransform{
			UniqueName: "External",
			Spec:       &pipepb.FunctionSpec{Urn: urn, Payload: payload},
			Inputs:     inputs,
		},
		Namespace: "ns1",
	}
}

func expandOK(t *testing.T, req *jobpb.ExpansionRequest) *jobpb.ExpansionResponse {
	t.Helper()
	res, err := quietService().Expand(context.Background(), req)
	if err != nil {
		t.Fatalf("Expand: RPC error %v", err)
	}
	if res.GetError() != "" {
		t.Fatalf("Expand: %s", res.GetError())
	}
	if n := len(res.GetComponents().GetEnvironments()); n != 0 {
		t.Errorf("response has %d environments, want none", n)
	}
	if e := res.GetTransform().GetEnvironmentId(); e != "" {
		t.Errorf("expanded transform has environment %q, want none", e)
	}
	return res
}

func coderURN(c *pipepb.Components, id string) string { return c.GetCoders()[id].GetSpec().GetUrn() }

// checkReadOutput checks the read's one output PCollection and returns it.
func checkReadOutput(t *testing.T, res *jobpb.ExpansionResponse) *pipepb.PCollection {
	t.Helper()
	if n := len(res.GetTransform().GetSubtransforms()); n != 0 {
		t.Errorf("expanded read has %d subtransforms, want a primitive", n)
	}
	outs := res.GetTransform().GetOutputs()
	if len(outs) != 1 {
		t.Fatalf("read has outputs %v, want one", outs)
	}
	c := res.GetComponents()
	pc, ok := c.GetPcollections()[outs[ReadOutputTag]]
	if !ok {
		t.Fatalf("output %q is not in the response's components", outs[ReadOutputTag])
	}
	ws, ok := c.GetWindowingStrategies()[pc.GetWindowingStrategyId()]
	if !ok {
		t.Fatalf("windowing strategy %q is not in the response's components", pc.GetWindowingStrategyId())
	}
	if got := ws.GetWindowFn().GetUrn(); got != urnGlobalWindows {
		t.Errorf("window fn %s, want %s", got, urnGlobalWindows)
	}
	if got := coderURN(c, ws.GetWindowCoderId()); got != urnGlobalWindowCoder {
		t.Errorf("window coder %s, want %s", got, urnGlobalWindowCoder)
	}
	return pc
}

func TestExpandRead(t *testing.T) {
	p := goRead("k:9092", "t")
	p.MaxNumRecords = ptr[int64](10)
	p.ConsumerConfig["auto.offset.reset"] = "earliest"
	res := expandOK(t, goRequest(ReadWithoutMetadataURN, beam.CrossLanguagePayload(p), nil, nil))

	spec := res.GetTransform().GetSpec()
	if spec.GetUrn() != kafkaio.ReadURN {
		t.Fatalf("expanded URN %s, want %s", spec.GetUrn(), kafkaio.ReadURN)
	}
	cfg, err := kafkaio.DecodeRead(spec.GetPayload())
	if err != nil {
		t.Fatalf("the runner cannot decode the payload: %v", err)
	}
	if cfg.Start != kafkaio.StartEarliest || cfg.MaxRecords != 10 || cfg.Topics[0] != "t" {
		t.Errorf("config %+v, want earliest, 10 records, topic t", cfg)
	}
	pc := checkReadOutput(t, res)
	if pc.GetIsBounded() != pipepb.IsBounded_BOUNDED {
		t.Errorf("a read of 10 records is %v, want BOUNDED", pc.GetIsBounded())
	}
	c := res.GetComponents()
	kv := c.GetCoders()[pc.GetCoderId()]
	if kv.GetSpec().GetUrn() != urnKVCoder || len(kv.GetComponentCoderIds()) != 2 ||
		coderURN(c, kv.ComponentCoderIds[0]) != urnBytesCoder || coderURN(c, kv.ComponentCoderIds[1]) != urnBytesCoder {
		t.Errorf("output coder %s, want KV<bytes, bytes>", describeCoder(c, pc.GetCoderId(), 0))
	}
	for id := range c.GetCoders() {
		if !strings.HasPrefix(id, "ns1/") {
			t.Errorf("coder id %q is outside the request's namespace", id)
		}
	}
}

func TestExpandReadWithMetadata(t *testing.T) {
	res := expandOK(t, goRequest(ReadWithMetadataURN, beam.CrossLanguagePayload(goRead("k:9092", "t")), nil, nil))
	cfg, err := kafkaio.DecodeRead(res.GetTransform().GetSpec().GetPayload())
	if err != nil || !cfg.WithMetadata {
		t.Fatalf("DecodeRead = %+v, %v; want WithMetadata", cfg, err)
	}
	pc := checkReadOutput(t, res)
	if pc.GetIsBounded() != pipepb.IsBounded_UNBOUNDED {
		t.Errorf("an endless read is %v, want UNBOUNDED", pc.GetIsBounded())
	}
	coder := res.GetComponents().GetCoders()[pc.GetCoderId()]
	if coder.GetSpec().GetUrn() != urnRowCoder {
		t.Fatalf("output coder %s, want %s", coder.GetSpec().GetUrn(), urnRowCoder)
	}
	var s pipepb.Schema
	if err := proto.Unmarshal(coder.GetSpec().GetPayload(), &s); err != nil {
		t.Fatalf("row coder payload: %v", err)
	}
	if !proto.Equal(&s, kafkaio.MetadataSchema()) {
		t.Errorf("row schema %v, want MetadataSchema", &s)
	}
}

// kvComponents holds PCollection n3 with the coder the Go SDK gives
// KV<[]byte, []byte>, or KV<string, []byte> when key is string_utf8.
func kvComponents(key string) *pipepb.Components {
	return &pipepb.Components{
		Pcollections: map[string]*pipepb.PCollection{"n3": {UniqueName: "n3", CoderId: "c2@ns1", WindowingStrategyId: "w0@ns1"}},
		Coders: map[string]*pipepb.Coder{
			"c0@ns1": {Spec: &pipepb.FunctionSpec{Urn: urnBytesCoder}},
			"c1@ns1": {Spec: &pipepb.FunctionSpec{Urn: key}},
			"c2@ns1": {Spec: &pipepb.FunctionSpec{Urn: urnKVCoder}, ComponentCoderIds: []string{"c1@ns1", "c0@ns1"}},
		},
	}
}

func TestExpandWrite(t *testing.T) {
	req := goRequest(WriteURN, beam.CrossLanguagePayload(goWrite("k:9092", "t")), map[string]string{"i0": "n3"}, kvComponents(urnBytesCoder))
	res := expandOK(t, req)
	comp := res.GetTransform()
	if n := len(comp.GetOutputs()); n != 0 {
		t.Errorf("write has %d outputs, want none (the Go SDK checks the count)", n)
	}
	if len(comp.GetSubtransforms()) != 1 {
		t.Fatalf("expanded write has %d subtransforms, want one primitive", len(comp.GetSubtransforms()))
	}
	tr := res.GetComponents().GetTransforms()[comp.GetSubtransforms()[0]]
	if tr.GetSpec().GetUrn() != kafkaio.WriteURN {
		t.Fatalf("expanded URN %s, want %s", tr.GetSpec().GetUrn(), kafkaio.WriteURN)
	}
	// Python's pre-optimization drops a leaf whose outputs are a subset of
	// its inputs: the primitive must write a PCollection of its own.
	if out := tr.GetOutputs()[WrittenTag]; len(tr.GetOutputs()) != 1 || res.GetComponents().GetPcollections()[out] == nil {
		t.Errorf("write primitive outputs %v, want one PCollection of its own under %q", tr.GetOutputs(), WrittenTag)
	}
	if cfg, err := kafkaio.DecodeWrite(tr.GetSpec().GetPayload()); err != nil || cfg.Topic != "t" {
		t.Errorf("DecodeWrite = %+v, %v; want topic t", cfg, err)
	}
	if got := tr.GetInputs(); len(got) != 1 || got["i0"] != "n3" {
		t.Errorf("inputs %v, want the request's {i0: n3}", got)
	}
	if _, ok := res.GetComponents().GetPcollections()["n3"]; !ok {
		t.Error("the response's components lost the input PCollection")
	}
}

func TestExpandErrors(t *testing.T) {
	read := beam.CrossLanguagePayload(goRead("k:9092", "t"))
	write := beam.CrossLanguagePayload(goWrite("k:9092", "t"))
	tests := []struct {
		name string
		req  *jobpb.ExpansionRequest
		want []string
	}{{
		name: "unknown URN",
		req:  goRequest("beam:transform:org.apache.beam:pubsub_read:v1", read, nil, nil),
		want: []string{"unknown URN", "pubsub_read"},
	}, {
		name: "no transform",
		req:  &jobpb.ExpansionRequest{},
		want: []string{"no transform"},
	}, {
		name: "missing bootstrap servers",
		req:  goRequest(ReadWithoutMetadataURN, beam.CrossLanguagePayload(goRead("", "t")), nil, nil),
		want: []string{ReadWithoutMetadataURN, "ConsumerConfig", "bootstrap.servers"},
	}, {
		name: "bad payload",
		req:  goRequest(WriteURN, []byte{0xff, 0xff}, map[string]string{"i0": "n3"}, kvComponents(urnBytesCoder)),
		want: []string{WriteURN, "ExternalConfigurationPayload"},
	}, {
		name: "read with an input",
		req:  goRequest(ReadWithoutMetadataURN, read, map[string]string{"i0": "n3"}, kvComponents(urnBytesCoder)),
		want: []string{ReadWithoutMetadataURN, "no inputs"},
	}, {
		name: "write without input",
		req:  goRequest(WriteURN, write, nil, nil),
		want: []string{WriteURN, "one input"},
	}, {
		name: "write of strings",
		req:  goRequest(WriteURN, write, map[string]string{"i0": "n3"}, kvComponents("beam:coder:string_utf8:v1")),
		want: []string{WriteURN, "input i0", "string_utf8", "want KV<bytes, bytes>"},
	}, {
		name: "write of an unknown PCollection",
		req:  goRequest(WriteURN, write, map[string]string{"i0": "n9"}, kvComponents(urnBytesCoder)),
		want: []string{WriteURN, `"n9"`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := quietService().Expand(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("Expand: RPC error %v; a bad request must get ExpansionResponse.Error", err)
			}
			if res.GetError() == "" {
				t.Fatalf("Expand succeeded with %v, want an error", res.GetTransform())
			}
			for _, w := range tt.want {
				if !strings.Contains(res.GetError(), w) {
					t.Errorf("error %q does not mention %q", res.GetError(), w)
				}
			}
		})
	}
}

func TestDiscoverSchemaTransform(t *testing.T) {
	res, err := quietService().DiscoverSchemaTransform(context.Background(), &jobpb.DiscoverSchemaTransformRequest{})
	if err != nil || len(res.GetSchemaTransformConfigs()) != 0 {
		t.Errorf("DiscoverSchemaTransform = %v, %v; want an empty list", res, err)
	}
}
