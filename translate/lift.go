package translate

import (
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// lift replaces a combine-per-key composite by its lifted form:
//
//	precombine (SDK, fused with the producer) → GroupByKey of accumulators
//	→ merge accumulators → extract outputs (SDK)
//
// so that only one accumulator per key and bundle crosses the shuffle. It
// returns the new leaves in order, or nil when the composite must run
// unlifted: no combine payload, an input that is not a KV, or a trigger
// that counts elements (countsElements).
func (b *builder) lift(id string, t *pipepb.PTransform) []string {
	var pl pipepb.CombinePayload
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil || pl.GetAccumulatorCoderId() == "" {
		return nil
	}
	if len(t.GetInputs()) != 1 || len(t.GetOutputs()) != 1 {
		return nil
	}
	in := t.GetInputs()[sortedKeys(t.GetInputs())[0]]
	out := t.GetOutputs()[sortedKeys(t.GetOutputs())[0]]
	inPC := b.comps.Pcollections[in]
	kv := b.comps.Coders[inPC.GetCoderId()]
	if kv.GetSpec().GetUrn() != "beam:coder:kv:v1" || len(kv.GetComponentCoderIds()) != 2 {
		return nil
	}
	ws := b.comps.WindowingStrategies[inPC.GetWindowingStrategyId()]
	if countsElements(ws.GetTrigger()) {
		return nil
	}
	if _, ok := b.comps.Coders[pl.GetAccumulatorCoderId()]; !ok {
		return nil
	}
	key := kv.GetComponentCoderIds()[0]
	kvAcc := b.addCoder(id+"/kv_acc", "beam:coder:kv:v1", key, pl.GetAccumulatorCoderId())
	iter := b.addCoder(id+"/iter_acc", "beam:coder:iterable:v1", pl.GetAccumulatorCoderId())
	kvIter := b.addCoder(id+"/kv_iter_acc", "beam:coder:kv:v1", key, iter)

	pcoll := func(suffix, coder string) string {
		pid := id + "/" + suffix
		b.comps.Pcollections[pid] = &pipepb.PCollection{UniqueName: t.GetUniqueName() + "/" + suffix,
			CoderId: coder, IsBounded: inPC.GetIsBounded(), WindowingStrategyId: inPC.GetWindowingStrategyId()}
		return pid
	}
	pre := pcoll("precombined", kvAcc)
	grouped := pcoll("grouped", kvIter)
	merged := pcoll("merged", kvAcc)

	step := func(suffix, urn, from, to string, payload []byte) string {
		sid := id + "/" + suffix
		b.comps.Transforms[sid] = &pipepb.PTransform{UniqueName: t.GetUniqueName() + "/" + suffix,
			Spec:   &pipepb.FunctionSpec{Urn: urn, Payload: payload},
			Inputs: map[string]string{"in": from}, Outputs: map[string]string{"out": to},
			EnvironmentId: t.GetEnvironmentId()}
		return sid
	}
	payload := t.GetSpec().GetPayload()
	ids := []string{
		step("Precombine", URNCombinePGBKCV, in, pre, payload),
		step("GroupByKey", URNGBK, pre, grouped, nil),
		step("MergeAccumulators", URNCombineMerge, grouped, merged, payload),
		step("ExtractOutputs", URNCombineExtract, merged, out, payload),
	}
	b.comps.Transforms[ids[1]].EnvironmentId = ""
	if g, c, ok := b.unliftedForm(t, in, out); ok {
		b.lifted[id] = liftedCombine{in: in, grouped: g, combine: c}
	}
	return ids
}

// liftedCombine is what a lifted combine's composite keeps of its own,
// unlifted, form: its input, its group-by-key's output and the transform
// that combines the grouped values.
type liftedCombine struct {
	in, grouped, combine string
}

// unliftedForm finds a combine composite's own unlifted form, when it is
// the plain one: a group-by-key of the input, then one transform from the
// groups to the output (the Go SDK's shape).
func (b *builder) unliftedForm(t *pipepb.PTransform, in, out string) (grouped, combine string, ok bool) {
	subs := t.GetSubtransforms()
	if len(subs) != 2 {
		return "", "", false
	}
	for _, g := range subs {
		gt := b.comps.Transforms[g]
		if gt.GetSpec().GetUrn() != URNGBK || len(gt.GetInputs()) != 1 || len(gt.GetOutputs()) != 1 ||
			gt.GetInputs()[sortedKeys(gt.GetInputs())[0]] != in {
			continue
		}
		grouped = gt.GetOutputs()[sortedKeys(gt.GetOutputs())[0]]
		for _, c := range subs {
			ct := b.comps.Transforms[c]
			if c == g || len(ct.GetSubtransforms()) > 0 || len(ct.GetInputs()) != 1 || len(ct.GetOutputs()) != 1 {
				continue
			}
			if ct.GetInputs()[sortedKeys(ct.GetInputs())[0]] == grouped && ct.GetOutputs()[sortedKeys(ct.GetOutputs())[0]] == out {
				return grouped, c, true
			}
		}
	}
	return "", "", false
}

// countsElements reports whether a trigger fires on the number of elements
// in a pane anywhere in its tree. Lifted, the group-by-key sees one
// accumulator per key and bundle instead of the elements, so such a
// trigger would count bundles. Any other trigger fires alike on
// accumulators: a discarding pane merges the accumulators that arrived
// since the last firing, an accumulating pane all of them, and either is
// the combine of the elements they hold.
func countsElements(t *pipepb.Trigger) bool {
	switch x := t.GetTrigger().(type) {
	case *pipepb.Trigger_ElementCount_, *pipepb.Trigger_Always_:
		return true
	case *pipepb.Trigger_AfterAll_:
		return anyCountsElements(x.AfterAll.GetSubtriggers())
	case *pipepb.Trigger_AfterAny_:
		return anyCountsElements(x.AfterAny.GetSubtriggers())
	case *pipepb.Trigger_AfterEach_:
		return anyCountsElements(x.AfterEach.GetSubtriggers())
	case *pipepb.Trigger_AfterEndOfWindow_:
		return countsElements(x.AfterEndOfWindow.GetEarlyFirings()) || countsElements(x.AfterEndOfWindow.GetLateFirings())
	case *pipepb.Trigger_OrFinally_:
		return countsElements(x.OrFinally.GetMain()) || countsElements(x.OrFinally.GetFinally())
	case *pipepb.Trigger_Repeat_:
		return countsElements(x.Repeat.GetSubtrigger())
	}
	return false
}

func anyCountsElements(ts []*pipepb.Trigger) bool {
	for _, t := range ts {
		if countsElements(t) {
			return true
		}
	}
	return false
}
