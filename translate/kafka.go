package translate

import (
	"errors"
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/wire"
)

// Kafka reads and writes are runner-native: weir reads and writes Kafka
// itself (package kafka). Their payloads and coders are checked here, at
// submission, so that a pipeline weir would run wrong is refused.

// urnRowCoder is Beam's row coder, of a read's output WithMetadata. The
// runner cannot measure it, so it is length-prefixed on its edges.
const urnRowCoder = "beam:coder:row:v1"

func isKafka(urn string) bool { return urn == kafkaio.ReadURN || urn == kafkaio.WriteURN }

// validateLeaf lists what weir cannot run about one leaf transform: the
// Kafka transforms here, every other in validate.
func (b *builder) validateLeaf(id string) []error {
	t := b.comps.Transforms[id]
	urn := t.GetSpec().GetUrn()
	if urn == fileio.WriteURN {
		return b.fileErrors(id)
	}
	if !isKafka(urn) {
		return b.validate(id)
	}
	where := fmt.Sprintf("transform %s (%s)", b.name(id), urn)
	var errs []error
	for _, err := range b.kafkaErrors(id) {
		errs = append(errs, fmt.Errorf("%s: %w", where, err))
	}
	return errs
}

func (b *builder) kafkaErrors(id string) []error {
	t := b.comps.Transforms[id]
	if t.GetSpec().GetUrn() == kafkaio.ReadURN {
		cfg, err := kafkaio.DecodeRead(t.GetSpec().GetPayload())
		if err != nil {
			return []error{err}
		}
		var errs []error
		if len(t.GetInputs()) != 0 || len(t.GetOutputs()) != 1 {
			return append(errs, fmt.Errorf("a Kafka read needs no inputs and one output, has %d and %d", len(t.GetInputs()), len(t.GetOutputs())))
		}
		out := t.GetOutputs()[sortedKeys(t.GetOutputs())[0]]
		check := b.kvBytes
		if cfg.WithMetadata {
			check = b.metadataRows
		}
		if err := check(out); err != nil {
			errs = append(errs, fmt.Errorf("output: %w", err))
		}
		pc := b.comps.GetPcollections()[out]
		if ws := b.comps.GetWindowingStrategies()[pc.GetWindowingStrategyId()]; b.comps.Coders[ws.GetWindowCoderId()].GetSpec().GetUrn() != wire.URNGlobalWindow {
			errs = append(errs, fmt.Errorf("output PCollection %q is not in the global window", out))
		}
		return errs
	}
	if _, err := kafkaio.DecodeWrite(t.GetSpec().GetPayload()); err != nil {
		return []error{err}
	}
	// weir's expansion gives the write an output no transform reads
	// (expansion.WrittenTag), so that Python's pre-optimization keeps it.
	if len(t.GetInputs()) != 1 || len(t.GetOutputs()) > 1 {
		return []error{fmt.Errorf("a Kafka write needs one input and at most one output, has %d and %d", len(t.GetInputs()), len(t.GetOutputs()))}
	}
	for _, out := range t.GetOutputs() {
		if r := b.readerOf(out); r != "" {
			return []error{fmt.Errorf("output PCollection %q is read by transform %s, but a Kafka write outputs nothing", out, b.name(r))}
		}
	}
	if err := b.kvBytes(t.GetInputs()[sortedKeys(t.GetInputs())[0]]); err != nil {
		return []error{fmt.Errorf("input: %w", err)}
	}
	return nil
}

// kvBytes checks that a PCollection's coder is KV<bytes, bytes>, the
// elements Kafka reads produce and writes take.
func (b *builder) kvBytes(pcoll string) error {
	pc, ok := b.comps.GetPcollections()[pcoll]
	if !ok {
		return fmt.Errorf("PCollection %q is not defined", pcoll)
	}
	c := b.comps.Coders[pc.GetCoderId()]
	ok = c.GetSpec().GetUrn() == wire.URNKV && len(c.GetComponentCoderIds()) == 2
	if ok {
		for _, cc := range c.GetComponentCoderIds() {
			ok = ok && b.comps.Coders[cc].GetSpec().GetUrn() == wire.URNBytes
		}
	}
	if !ok {
		return fmt.Errorf("PCollection %q has coder %q (%s), not KV<bytes, bytes>", pcoll, pc.GetCoderId(), b.describeCoder(pc.GetCoderId()))
	}
	return nil
}

// metadataRows checks that a PCollection's coder is a row coder of
// kafkaio.MetadataSchema, the rows a read WithMetadata produces. Schema
// ids and options may differ (an SDK may re-id the schema it was given);
// field names, order and types may not.
func (b *builder) metadataRows(pcoll string) error {
	pc, ok := b.comps.GetPcollections()[pcoll]
	if !ok {
		return fmt.Errorf("PCollection %q is not defined", pcoll)
	}
	c := b.comps.Coders[pc.GetCoderId()]
	if c.GetSpec().GetUrn() != urnRowCoder {
		return fmt.Errorf("PCollection %q has coder %q (%s), not a row of Kafka records (with_metadata)", pcoll, pc.GetCoderId(), b.describeCoder(pc.GetCoderId()))
	}
	var got pipepb.Schema
	if err := proto.Unmarshal(c.GetSpec().GetPayload(), &got); err != nil {
		return fmt.Errorf("PCollection %q: row coder %q: bad schema: %w", pcoll, pc.GetCoderId(), err)
	}
	if err := sameFields(&got, kafkaio.MetadataSchema()); err != nil {
		return fmt.Errorf("PCollection %q: row coder %q is not of Kafka records (with_metadata): %w", pcoll, pc.GetCoderId(), err)
	}
	return nil
}

// sameFields compares two schemas' fields by name, order and type, not
// by ids or options.
func sameFields(got, want *pipepb.Schema) error {
	if len(got.GetFields()) != len(want.GetFields()) {
		return fmt.Errorf("%d fields, want %d", len(got.GetFields()), len(want.GetFields()))
	}
	for i, w := range want.GetFields() {
		g := got.GetFields()[i]
		if g.GetName() != w.GetName() {
			return fmt.Errorf("field %d is %q, want %q", i, g.GetName(), w.GetName())
		}
		if err := sameType(g.GetType(), w.GetType()); err != nil {
			return fmt.Errorf("field %s: %w", w.GetName(), err)
		}
	}
	return nil
}

func sameType(got, want *pipepb.FieldType) error {
	if got.GetNullable() != want.GetNullable() {
		return fmt.Errorf("nullable %v, want %v", got.GetNullable(), want.GetNullable())
	}
	switch {
	case want.GetRowType() != nil:
		if got.GetRowType() == nil {
			return errors.New("not a row")
		}
		return sameFields(got.GetRowType().GetSchema(), want.GetRowType().GetSchema())
	case want.GetArrayType() != nil:
		if got.GetArrayType() == nil {
			return errors.New("not an array")
		}
		return sameType(got.GetArrayType().GetElementType(), want.GetArrayType().GetElementType())
	case got.GetAtomicType() != want.GetAtomicType() || got.GetAtomicType() == pipepb.AtomicType_UNSPECIFIED:
		return fmt.Errorf("type %v, want %v", got.GetTypeInfo(), want.GetTypeInfo())
	}
	return nil
}

// describeCoder writes a coder as URN<components...>.
func (b *builder) describeCoder(id string) string {
	c := b.comps.Coders[id]
	s := c.GetSpec().GetUrn()
	if len(c.GetComponentCoderIds()) == 0 {
		return s
	}
	s += "<"
	for i, cc := range c.GetComponentCoderIds() {
		if i > 0 {
			s += ", "
		}
		s += b.describeCoder(cc)
	}
	return s + ">"
}

// placeKafka gives a Kafka transform a stage of its own and reports
// whether id was one. Validation has passed, so decoding does not fail.
func (b *builder) placeKafka(id string) bool {
	t := b.comps.Transforms[id]
	switch t.GetSpec().GetUrn() {
	case kafkaio.ReadURN:
		s := b.newStage(id, KindKafkaRead)
		s.KafkaRead, _ = kafkaio.DecodeRead(t.GetSpec().GetPayload())
	case kafkaio.WriteURN:
		s := b.newStage(id, KindKafkaWrite)
		s.KafkaWrite, _ = kafkaio.DecodeWrite(t.GetSpec().GetPayload())
		for _, pc := range sortedValues(t.GetInputs()) {
			s.Inputs = append(s.Inputs, Input{PColl: pc})
		}
	case fileio.WriteURN:
		b.placeFile(id)
	default:
		return false
	}
	return true
}

// readerOf returns a leaf transform that reads PCollection pc, or "".
func (b *builder) readerOf(pc string) string {
	for _, id := range sortedKeys(b.comps.GetTransforms()) {
		t := b.comps.Transforms[id]
		if len(t.GetSubtransforms()) > 0 {
			continue
		}
		for _, in := range t.GetInputs() {
			if in == pc {
				return id
			}
		}
	}
	return ""
}
