package connector

import (
	"fmt"
	"sort"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/wire"
)

// Transform is the view of one leaf transform a Connector decodes: the
// transform and the pipeline's components, read-only.
type Transform struct {
	ID         string
	Proto      *pipepb.PTransform
	Components *pipepb.Components
}

// Name is the transform's unique name, or its ID.
func (t *Transform) Name() string {
	if n := t.Proto.GetUniqueName(); n != "" {
		return n
	}
	return t.ID
}

// Payload is the transform's payload.
func (t *Transform) Payload() []byte { return t.Proto.GetSpec().GetPayload() }

// Inputs returns the input PCollections, by local name in sorted order.
func (t *Transform) Inputs() []string { return sortedValues(t.Proto.GetInputs()) }

// Outputs returns the output PCollections, by local name in sorted order.
func (t *Transform) Outputs() []string { return sortedValues(t.Proto.GetOutputs()) }

// Ports checks the numbers of inputs and outputs; max -1 is no bound.
func (t *Transform) Ports(what string, inputs, minOut, maxOut int) error {
	in, out := len(t.Proto.GetInputs()), len(t.Proto.GetOutputs())
	if in == inputs && out >= minOut && (maxOut < 0 || out <= maxOut) {
		return nil
	}
	want := fmt.Sprintf("%d outputs", minOut)
	switch {
	case minOut == maxOut && minOut == 1:
		want = "one output"
	case minOut == maxOut && minOut == 0:
		want = "no outputs"
	case minOut == 0 && maxOut == 1:
		want = "at most one output"
	}
	ins := map[int]string{0: "no inputs", 1: "one input"}[inputs]
	if ins == "" {
		ins = fmt.Sprintf("%d inputs", inputs)
	}
	return fmt.Errorf("%s needs %s and %s, has %d and %d", what, ins, want, in, out)
}

// PColl returns a PCollection, or an error if it is not defined.
func (t *Transform) PColl(id string) (*pipepb.PCollection, error) {
	pc, ok := t.Components.GetPcollections()[id]
	if !ok {
		return nil, fmt.Errorf("PCollection %q is not defined", id)
	}
	return pc, nil
}

// Coder returns a coder; nil if it is not defined.
func (t *Transform) Coder(id string) *pipepb.Coder { return t.Components.GetCoders()[id] }

// CoderURN returns the URN of a PCollection's coder.
func (t *Transform) CoderURN(pcoll string) (string, error) {
	pc, err := t.PColl(pcoll)
	if err != nil {
		return "", err
	}
	return t.Coder(pc.GetCoderId()).GetSpec().GetUrn(), nil
}

// DescribeCoder writes a coder as URN<components...>, for errors.
func (t *Transform) DescribeCoder(id string) string {
	c := t.Coder(id)
	s := c.GetSpec().GetUrn()
	if len(c.GetComponentCoderIds()) == 0 {
		return s
	}
	parts := make([]string, len(c.GetComponentCoderIds()))
	for i, cc := range c.GetComponentCoderIds() {
		parts[i] = t.DescribeCoder(cc)
	}
	return s + "<" + strings.Join(parts, ", ") + ">"
}

// CheckKVBytes checks that a PCollection's coder is KV<bytes, bytes>.
func (t *Transform) CheckKVBytes(pcoll string) error {
	pc, err := t.PColl(pcoll)
	if err != nil {
		return err
	}
	c := t.Coder(pc.GetCoderId())
	ok := c.GetSpec().GetUrn() == wire.URNKV && len(c.GetComponentCoderIds()) == 2
	if ok {
		for _, cc := range c.GetComponentCoderIds() {
			ok = ok && t.Coder(cc).GetSpec().GetUrn() == wire.URNBytes
		}
	}
	if !ok {
		return fmt.Errorf("PCollection %q has coder %q (%s), not KV<bytes, bytes>", pcoll, pc.GetCoderId(), t.DescribeCoder(pc.GetCoderId()))
	}
	return nil
}

// CheckGlobalWindow checks that a PCollection is in the global window.
func (t *Transform) CheckGlobalWindow(pcoll string) error {
	pc, err := t.PColl(pcoll)
	if err != nil {
		return err
	}
	ws := t.Components.GetWindowingStrategies()[pc.GetWindowingStrategyId()]
	if t.Coder(ws.GetWindowCoderId()).GetSpec().GetUrn() != wire.URNGlobalWindow {
		return fmt.Errorf("output PCollection %q is not in the global window", pcoll)
	}
	return nil
}

// ReaderOf returns the name of a leaf transform that reads PCollection
// pc, or "".
func (t *Transform) ReaderOf(pc string) string {
	ts := t.Components.GetTransforms()
	ids := make([]string, 0, len(ts))
	for id := range ts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := ts[id]
		if len(r.GetSubtransforms()) > 0 {
			continue
		}
		for _, in := range r.GetInputs() {
			if in == pc {
				return (&Transform{ID: id, Proto: r}).Name()
			}
		}
	}
	return ""
}

func sortedValues(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}
