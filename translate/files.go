package translate

import (
	"fmt"

	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/wire"
)

// File writes (fileio.WriteURN) are runner-native like Kafka's: weir
// writes the files itself (package filesink). Their payload and input
// coder are checked here, at submission.

// fileErrors lists what weir cannot run about a file write.
func (b *builder) fileErrors(id string) []error {
	t := b.comps.Transforms[id]
	where := fmt.Sprintf("transform %s (%s)", b.name(id), fileio.WriteURN)
	if _, err := fileio.DecodeWrite(t.GetSpec().GetPayload()); err != nil {
		return []error{fmt.Errorf("%s: %w", where, err)}
	}
	if len(t.GetInputs()) != 1 || len(t.GetOutputs()) != 0 {
		return []error{fmt.Errorf("%s: a file write needs one input and no outputs, has %d and %d", where, len(t.GetInputs()), len(t.GetOutputs()))}
	}
	pcoll := t.GetInputs()[sortedKeys(t.GetInputs())[0]]
	pc, ok := b.comps.GetPcollections()[pcoll]
	if !ok {
		return []error{fmt.Errorf("%s: PCollection %q is not defined", where, pcoll)}
	}
	switch urn := b.comps.Coders[pc.GetCoderId()].GetSpec().GetUrn(); urn {
	case wire.URNBytes, wire.URNStringUTF8:
	default:
		return []error{fmt.Errorf("%s: input PCollection %q has coder %q (%s), not bytes or string", where, pcoll, pc.GetCoderId(), b.describeCoder(pc.GetCoderId()))}
	}
	return nil
}

// placeFile gives a file write a stage of its own. Validation has passed,
// so decoding does not fail.
func (b *builder) placeFile(id string) {
	t := b.comps.Transforms[id]
	s := b.newStage(id, KindFileWrite)
	s.FileWrite, _ = fileio.DecodeWrite(t.GetSpec().GetPayload())
	for _, pc := range sortedValues(t.GetInputs()) {
		s.Inputs = append(s.Inputs, Input{PColl: pc})
	}
}
