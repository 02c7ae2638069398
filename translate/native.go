package translate

import (
	"fmt"

	"github.com/weir-runner/weir/connector"
)

// Connectors' transforms (Options.Connectors) are runner-native: weir
// runs them itself (Kafka reads and writes, file writes, TestStreams).
// Each is decoded once, here, by its connector, which checks its payload
// and coders at submission; its stage carries the decoded configuration.

// validateLeaf lists what weir cannot run about one leaf transform: a
// connector's transform is decoded by its connector, every other checked
// in validate.
func (b *builder) validateLeaf(id string) []error {
	t := b.comps.Transforms[id]
	urn := t.GetSpec().GetUrn()
	conn, ok := b.conns.Lookup(urn)
	if !ok || b.sdkSide[id] {
		return b.validate(id)
	}
	cfg, errs := conn.Decode(b.view(id))
	where := fmt.Sprintf("transform %s (%s)", b.name(id), urn)
	for i, err := range errs {
		errs[i] = fmt.Errorf("%s: %w", where, err)
	}
	if len(errs) == 0 {
		if cfg == nil {
			return []error{fmt.Errorf("%s: connector %T decoded nothing", where, conn)}
		}
		b.natives[id] = cfg
	}
	return errs
}

// view is what a connector sees of transform id.
func (b *builder) view(id string) *connector.Transform {
	return &connector.Transform{ID: id, Proto: b.comps.Transforms[id], Components: b.comps}
}

// placeNative gives a connector's transform a stage of its own.
func (b *builder) placeNative(id string, cfg connector.Config) {
	t := b.comps.Transforms[id]
	s := b.newStage(id, KindNative)
	s.Native, s.URN = cfg, t.GetSpec().GetUrn()
	for _, pc := range sortedValues(t.GetInputs()) {
		s.Inputs = append(s.Inputs, Input{PColl: pc})
	}
}
