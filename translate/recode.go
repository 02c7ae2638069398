package translate

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/wire"
)

// recodeFlattenInputs makes every input of a runner-side Flatten arrive in
// the Flatten's output coder. The runner's Flatten passes encoded elements
// through, so an input written in another coder (Python flattens a
// CoGroupByKey's tagged inputs into a union coder) would reach the
// consumer in bytes its coder cannot read. Each such input gets a
// one-input Flatten of its own that runs in an SDK, fused with its
// producer where it can be, whose output has the Flatten's coder: the SDK
// decodes with one coder and encodes with the other. It returns the
// leaves with the new transforms, in topological order.
func (b *builder) recodeFlattenInputs(leaves []string) ([]string, error) {
	producer := map[string]string{}
	for _, id := range leaves {
		for _, pc := range b.comps.Transforms[id].GetOutputs() {
			producer[pc] = id
		}
	}
	added := false
	for _, id := range leaves {
		t := b.comps.Transforms[id]
		if t.GetSpec().GetUrn() != URNFlatten || len(t.GetOutputs()) != 1 {
			continue
		}
		out := b.comps.Pcollections[onlyValue(t.GetOutputs())]
		for local, in := range t.GetInputs() {
			pc := b.comps.Pcollections[in]
			if pc == nil || out == nil || b.sameCoder(pc.GetCoderId(), out.GetCoderId()) {
				continue
			}
			env := b.recodeEnv(producer[in], onlyValue(t.GetOutputs()))
			if env == "" {
				return nil, fmt.Errorf("translate: transform %s (%s): input %s is in coder %q, not the output's %q, and no SDK environment is there to convert it",
					b.name(id), URNFlatten, local, pc.GetCoderId(), out.GetCoderId())
			}
			recoded := b.addPColl(in+"/recoded", &pipepb.PCollection{UniqueName: pc.GetUniqueName() + "/recoded",
				CoderId: out.GetCoderId(), IsBounded: pc.GetIsBounded(), WindowingStrategyId: pc.GetWindowingStrategyId()})
			t.Inputs[local] = recoded
			leaves = append(leaves, b.addRecoder(id+"/recode/"+local, t.GetUniqueName()+"/Recode/"+local, in, recoded, env))
			added = true
		}
	}
	if !added {
		return leaves, nil
	}
	return b.topoSort(leaves)
}

// recodeEnv picks the SDK environment that converts an input of a Flatten:
// its producer's, else that of a transform reading the Flatten's output,
// else the pipeline's only one.
func (b *builder) recodeEnv(producer, flattened string) string {
	if t := b.comps.Transforms[producer]; t != nil && t.GetEnvironmentId() != "" {
		return t.GetEnvironmentId()
	}
	for _, id := range sortedKeys(b.comps.Transforms) {
		t := b.comps.Transforms[id]
		if t.GetEnvironmentId() == "" || len(t.GetSubtransforms()) > 0 {
			continue
		}
		for _, pc := range t.GetInputs() {
			if pc == flattened {
				return t.GetEnvironmentId()
			}
		}
	}
	if len(b.comps.GetEnvironments()) == 1 {
		for e := range b.comps.GetEnvironments() {
			return e
		}
	}
	return ""
}

// recodeNativeOutputs lets a connector's source whose elements are in
// another coder than its output's run (connector.OutputCoder): Python
// encodes a TestStream's events with the coder given to TestStream and
// types the output by its hints, often pickled. The source then writes a
// PCollection of its elements' coder, read by an SDK-side one-input
// Flatten that writes the original output in its own coder, as for a
// Flatten's inputs (recodeFlattenInputs). It returns the leaves with the
// new transforms, in topological order.
func (b *builder) recodeNativeOutputs(leaves []string) ([]string, error) {
	added := false
	for _, id := range leaves {
		t := b.comps.Transforms[id]
		conn, ok := b.conns.Lookup(t.GetSpec().GetUrn())
		oc, recodes := conn.(connector.OutputCoder)
		if !ok || !recodes || len(t.GetOutputs()) != 1 {
			continue
		}
		coder, ok := oc.OutputCoder(b.view(id))
		if !ok || b.comps.Coders[coder] == nil {
			continue // Decode says what is wrong
		}
		local := sortedKeys(t.GetOutputs())[0]
		out := b.comps.Pcollections[t.GetOutputs()[local]]
		if out == nil || b.sameCoder(out.GetCoderId(), coder) || b.lpOf(out.GetCoderId(), coder) {
			continue
		}
		env := b.recodeEnv("", t.GetOutputs()[local])
		if env == "" {
			continue // Decode refuses the coders
		}
		raw := b.addPColl(t.GetOutputs()[local]+"/events", &pipepb.PCollection{UniqueName: out.GetUniqueName() + "/events",
			CoderId: coder, IsBounded: out.GetIsBounded(), WindowingStrategyId: out.GetWindowingStrategyId()})
		leaves = append(leaves, b.addRecoder(id+"/recode", t.GetUniqueName()+"/Recode", raw, t.GetOutputs()[local], env))
		t.Outputs[local] = raw
		added = true
	}
	if !added {
		return leaves, nil
	}
	return b.topoSort(leaves)
}

// addRecoder adds a one-input Flatten from PCollection in to out that runs
// in SDK environment env, where it decodes with in's coder and encodes
// with out's, and returns its id.
func (b *builder) addRecoder(id, name, in, out, env string) string {
	rid := b.addTransform(id, &pipepb.PTransform{
		UniqueName:    name,
		Spec:          &pipepb.FunctionSpec{Urn: URNFlatten},
		Inputs:        map[string]string{"in": in},
		Outputs:       map[string]string{"out": out},
		EnvironmentId: env,
	})
	b.sdkSide[rid] = true
	return rid
}

// lpOf reports whether coder id is a length prefix of coder inner.
func (b *builder) lpOf(id, inner string) bool {
	c := b.comps.Coders[id]
	return c.GetSpec().GetUrn() == wire.URNLengthPrefix && len(c.GetComponentCoderIds()) == 1 && c.GetComponentCoderIds()[0] == inner
}

// sameCoder reports whether two coder ids name the same encoding.
func (b *builder) sameCoder(a, c string) bool {
	if a == c {
		return true
	}
	ca, cc := b.comps.Coders[a], b.comps.Coders[c]
	if ca == nil || cc == nil || ca.GetSpec().GetUrn() != cc.GetSpec().GetUrn() ||
		string(ca.GetSpec().GetPayload()) != string(cc.GetSpec().GetPayload()) ||
		len(ca.GetComponentCoderIds()) != len(cc.GetComponentCoderIds()) {
		return false
	}
	for i := range ca.GetComponentCoderIds() {
		if !b.sameCoder(ca.GetComponentCoderIds()[i], cc.GetComponentCoderIds()[i]) {
			return false
		}
	}
	return true
}

func (b *builder) addPColl(id string, pc *pipepb.PCollection) string {
	for b.comps.Pcollections[id] != nil {
		id += "_"
	}
	b.comps.Pcollections[id] = pc
	return id
}

func (b *builder) addTransform(id string, t *pipepb.PTransform) string {
	for b.comps.Transforms[id] != nil {
		id += "_"
	}
	b.comps.Transforms[id] = t
	return id
}

func onlyValue(m map[string]string) string {
	for _, v := range m {
		return v
	}
	return ""
}
