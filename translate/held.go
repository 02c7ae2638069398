package translate

import (
	"slices"

	"github.com/weir-runner/weir/wire"
)

// URNStateBackedIterable is the coder of an iterable whose tail may be a
// token the reader fetches the rest with, over the state API. An SDK that
// lists it in its environment's capabilities can read such iterables.
const URNStateBackedIterable = "beam:coder:state_backed_iterable:v1"

// markHeld finds the group-by-key outputs whose large groups may travel as
// state-backed iterables: every stage that reads one must be an SDK stage
// reading it as main input (the SDK's data source is what opens the state
// stream; side inputs and runner stages need the values themselves), not
// an SDF stage, in an environment that declares it can. Those SDKs are
// told the state-backed coder for it, so that SDKs which only decode the
// token with that coder (Python, Java) read it too.
func (b *builder) markHeld(plan *Plan) {
	readers := map[string][]*Stage{}
	for _, s := range plan.Stages {
		for _, in := range s.Inputs {
			readers[in.PColl] = append(readers[in.PColl], s)
		}
	}
	for _, s := range plan.Stages {
		if s.Kind != KindGBK || s.Triggered || s.Merging {
			continue
		}
		for _, out := range s.Outputs {
			rs := readers[out]
			if len(rs) == 0 || !b.canReadHeld(out, rs) {
				continue
			}
			pc := plan.PColls[out]
			if c := b.stateBackedWireCoder(pc); c != "" {
				pc.HeldReaders, pc.SourceCoder = len(rs), c
			}
		}
	}
}

func (b *builder) canReadHeld(pcoll string, readers []*Stage) bool {
	for _, r := range readers {
		if r.Kind != KindSDK || r.SDF || r.MainInput() != pcoll {
			return false
		}
		for _, in := range r.Inputs {
			if in.PColl == pcoll && in.Side != nil {
				return false
			}
		}
		if !slices.Contains(b.comps.Environments[r.EnvID].GetCapabilities(), URNStateBackedIterable) {
			return false
		}
	}
	return true
}

// stateBackedWireCoder returns pc's wire coder with the KV's iterable
// value marked state-backed, or "" when its element is not a KV of an
// iterable.
func (b *builder) stateBackedWireCoder(pc *PColl) string {
	wv := b.comps.Coders[pc.WireCoder]
	kv := b.comps.Coders[wv.GetComponentCoderIds()[0]]
	if kv.GetSpec().GetUrn() != wire.URNKV || len(kv.GetComponentCoderIds()) != 2 {
		return ""
	}
	it := b.comps.Coders[kv.GetComponentCoderIds()[1]]
	if it.GetSpec().GetUrn() != wire.URNIterable {
		return ""
	}
	sbi := b.addCoder(kv.GetComponentCoderIds()[1]+"_sbi", URNStateBackedIterable, it.GetComponentCoderIds()...)
	kvID := b.addCoder(wv.GetComponentCoderIds()[0]+"_sbi", wire.URNKV, kv.GetComponentCoderIds()[0], sbi)
	return b.addCoder(pc.WireCoder+"_sbi", wire.URNWindowedValue, kvID, wv.GetComponentCoderIds()[1])
}
