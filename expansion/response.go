package expansion

import (
	"encoding/json"
	"fmt"
	"maps"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/kafkaio"
)

const (
	urnBytesCoder        = "beam:coder:bytes:v1"
	urnKVCoder           = "beam:coder:kv:v1"
	urnRowCoder          = "beam:coder:row:v1"
	urnGlobalWindowCoder = "beam:coder:global_window:v1"
	urnGlobalWindows     = "beam:window_fn:global_windows:v1"
	// urnGenericComposite is the URN Python gives a composite of its own.
	urnGenericComposite = "beam:transform:generic_composite:v1"
)

// ReadOutputTag is the tag of a read's one output.
const ReadOutputTag = "out"

// ids hands out component ids under the request's namespace, which the SDK
// chose unique to this expansion so they cannot collide with the pipeline's.
type ids struct{ ns string }

func (x ids) id(name string) string { return x.ns + "/weir_kafka_" + name }

// baseComponents copies the request's components for the response: Java's
// expansion service returns them too, and the Python SDK looks the input
// PCollections up there. Environments are dropped: the expanded transform
// needs none, and the Go SDK would try to fetch the artifacts of every
// environment it gets back from this service.
func baseComponents(req *jobpb.ExpansionRequest) *pipepb.Components {
	c := proto.Clone(req.GetComponents()).(*pipepb.Components)
	if c == nil {
		c = &pipepb.Components{}
	}
	c.Environments = nil
	if c.Transforms == nil {
		c.Transforms = map[string]*pipepb.PTransform{}
	}
	if c.Pcollections == nil {
		c.Pcollections = map[string]*pipepb.PCollection{}
	}
	if c.Coders == nil {
		c.Coders = map[string]*pipepb.Coder{}
	}
	if c.WindowingStrategies == nil {
		c.WindowingStrategies = map[string]*pipepb.WindowingStrategy{}
	}
	return c
}

// readResponse expands a read into one primitive with a new output
// PCollection in the global window.
func readResponse(req *jobpb.ExpansionRequest, x ids, cfg *kafkaio.ReadConfig) (*jobpb.ExpansionResponse, error) {
	urn := req.GetTransform().GetSpec().GetUrn()
	if n := len(req.GetTransform().GetInputs()); n != 0 {
		return nil, fmt.Errorf("%s: a read has no inputs, the transform has %d", urn, n)
	}
	payload, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding weir's read configuration: %w", urn, err)
	}
	c := baseComponents(req)
	elem := kvBytesCoder(c, x)
	if cfg.WithMetadata {
		elem = x.id("record")
		c.Coders[elem] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urnRowCoder, Payload: kafkaio.MetadataSchemaBytes()}}
	}
	bounded := pipepb.IsBounded_UNBOUNDED
	if cfg.Bounded() {
		bounded = pipepb.IsBounded_BOUNDED
	}
	out := x.id("read_out")
	c.Pcollections[out] = &pipepb.PCollection{
		UniqueName:          req.GetTransform().GetUniqueName() + "." + ReadOutputTag,
		CoderId:             elem,
		IsBounded:           bounded,
		WindowingStrategyId: globalWindowing(c, x),
	}
	t := &pipepb.PTransform{
		UniqueName: req.GetTransform().GetUniqueName(),
		Spec:       &pipepb.FunctionSpec{Urn: kafkaio.ReadURN, Payload: payload},
		Outputs:    map[string]string{ReadOutputTag: out},
	}
	return &jobpb.ExpansionResponse{Components: c, Transform: t}, nil
}

// WrittenTag is the tag of the write primitive's one output, which no
// transform reads and which carries nothing.
const WrittenTag = "written"

// writeResponse expands a write into a composite with no outputs (what the
// request asks for: the Go SDK checks the count) over one primitive that
// consumes the request's input. The primitive has an output of its own,
// read by nothing: Python's pre-optimization drops every leaf whose
// outputs are a subset of its inputs, a leaf with none included, so a
// write without one vanished from a batch Python pipeline, which then
// ended DONE having written nothing. Java's KafkaIO ends in a ParDo, which
// has an output, for the same effect.
func writeResponse(req *jobpb.ExpansionRequest, x ids, cfg *kafkaio.WriteConfig) (*jobpb.ExpansionResponse, error) {
	return sinkResponse(req, x, kafkaio.WriteURN, cfg, checkKVBytes)
}

// sinkResponse is writeResponse for any runner-native sink: native is
// its URN, cfg becomes its JSON payload, check checks its input.
func sinkResponse(req *jobpb.ExpansionRequest, x ids, native string, cfg any, check func(*pipepb.Components, string) error) (*jobpb.ExpansionResponse, error) {
	urn := req.GetTransform().GetSpec().GetUrn()
	in := req.GetTransform().GetInputs()
	if len(in) != 1 {
		return nil, fmt.Errorf("%s: a write has one input, the transform has %d", urn, len(in))
	}
	if n := len(req.GetTransform().GetOutputs()); n != 0 {
		return nil, fmt.Errorf("%s: a write has no outputs, the transform has %d", urn, n)
	}
	c := baseComponents(req)
	var input *pipepb.PCollection
	for tag, pc := range in {
		if err := check(c, pc); err != nil {
			return nil, fmt.Errorf("%s: input %s: %w", urn, tag, err)
		}
		input = c.Pcollections[pc]
	}
	payload, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding weir's write configuration: %w", urn, err)
	}
	name := req.GetTransform().GetUniqueName()
	written := x.id("written")
	bytes := x.id("bytes")
	c.Coders[bytes] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urnBytesCoder}}
	c.Pcollections[written] = &pipepb.PCollection{
		UniqueName:          name + "/Write." + WrittenTag,
		CoderId:             bytes,
		IsBounded:           input.GetIsBounded(),
		WindowingStrategyId: globalWindowing(c, x),
	}
	leaf := x.id("write")
	c.Transforms[leaf] = &pipepb.PTransform{
		UniqueName: name + "/Write",
		Spec:       &pipepb.FunctionSpec{Urn: native, Payload: payload},
		Inputs:     maps.Clone(in),
		Outputs:    map[string]string{WrittenTag: written},
	}
	t := &pipepb.PTransform{
		UniqueName:    name,
		Spec:          &pipepb.FunctionSpec{Urn: urnGenericComposite},
		Inputs:        maps.Clone(in),
		Subtransforms: []string{leaf},
	}
	return &jobpb.ExpansionResponse{Components: c, Transform: t}, nil
}

// kvBytesCoder adds KV<bytes, bytes> and returns its id.
func kvBytesCoder(c *pipepb.Components, x ids) string {
	b, kv := x.id("bytes"), x.id("kv_bytes_bytes")
	c.Coders[b] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urnBytesCoder}}
	c.Coders[kv] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urnKVCoder}, ComponentCoderIds: []string{b, b}}
	return kv
}

// globalWindowing adds the global windowing strategy with the default
// trigger, what a Java read produces, and returns its id.
func globalWindowing(c *pipepb.Components, x ids) string {
	wc, ws := x.id("global_window"), x.id("global_windowing")
	c.Coders[wc] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urnGlobalWindowCoder}}
	c.WindowingStrategies[ws] = &pipepb.WindowingStrategy{
		WindowFn:         &pipepb.FunctionSpec{Urn: urnGlobalWindows},
		MergeStatus:      pipepb.MergeStatus_NON_MERGING,
		WindowCoderId:    wc,
		Trigger:          &pipepb.Trigger{Trigger: &pipepb.Trigger_Default_{Default: &pipepb.Trigger_Default{}}},
		AccumulationMode: pipepb.AccumulationMode_DISCARDING,
		OutputTime:       pipepb.OutputTime_END_OF_WINDOW,
		ClosingBehavior:  pipepb.ClosingBehavior_EMIT_IF_NONEMPTY,
		OnTimeBehavior:   pipepb.OnTimeBehavior_FIRE_IF_NONEMPTY,
	}
	return ws
}

// checkKVBytes makes sure a write's input is KV<bytes, bytes>, the only
// thing weir's write can send to Kafka unchanged.
func checkKVBytes(c *pipepb.Components, pcoll string) error {
	pc, ok := c.GetPcollections()[pcoll]
	if !ok {
		return fmt.Errorf("PCollection %q is not in the request's components", pcoll)
	}
	kv, ok := c.GetCoders()[pc.GetCoderId()]
	if !ok {
		return fmt.Errorf("PCollection %q: coder %q is not in the request's components", pcoll, pc.GetCoderId())
	}
	if kv.GetSpec().GetUrn() == urnKVCoder && len(kv.GetComponentCoderIds()) == 2 {
		k, v := c.GetCoders()[kv.ComponentCoderIds[0]], c.GetCoders()[kv.ComponentCoderIds[1]]
		if k.GetSpec().GetUrn() == urnBytesCoder && v.GetSpec().GetUrn() == urnBytesCoder {
			return nil
		}
	}
	return fmt.Errorf("PCollection %q has coder %s, want KV<bytes, bytes> (%s of two %s)", pcoll, describeCoder(c, pc.GetCoderId(), 0), urnKVCoder, urnBytesCoder)
}

func unmarshalSchema(c *pipepb.Coder, s *pipepb.Schema) error {
	return proto.Unmarshal(c.GetSpec().GetPayload(), s)
}

// describeCoder renders a coder and its components for an error message.
func describeCoder(c *pipepb.Components, id string, depth int) string {
	cd, ok := c.GetCoders()[id]
	if !ok || depth > 4 {
		return "?"
	}
	s := cd.GetSpec().GetUrn()
	if ids := cd.GetComponentCoderIds(); len(ids) > 0 {
		parts := make([]string, len(ids))
		for i, cid := range ids {
			parts[i] = describeCoder(c, cid, depth+1)
		}
		s += fmt.Sprint(parts)
	}
	return s
}
