package translate

import (
	"errors"
	"fmt"

	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/wire"
)

// Kafka reads and writes are runner-native: weir reads and writes Kafka
// itself (package kafka). Their payloads and coders are checked here, at
// submission, so that a pipeline weir would run wrong is refused.

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
		if cfg.WithMetadata {
			errs = append(errs, errors.New("with_metadata (KafkaRecord output) is not supported yet; the output is KV<bytes, bytes>"))
		}
		if len(t.GetInputs()) != 0 || len(t.GetOutputs()) != 1 {
			return append(errs, fmt.Errorf("a Kafka read needs no inputs and one output, has %d and %d", len(t.GetInputs()), len(t.GetOutputs())))
		}
		out := t.GetOutputs()[sortedKeys(t.GetOutputs())[0]]
		if err := b.kvBytes(out); err != nil {
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
	if len(t.GetInputs()) != 1 || len(t.GetOutputs()) != 0 {
		return []error{fmt.Errorf("a Kafka write needs one input and no outputs, has %d and %d", len(t.GetInputs()), len(t.GetOutputs()))}
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
