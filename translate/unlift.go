package translate

import (
	"strings"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// Unlift is a lifted combine that the runner may run in its unlifted form
// after all, decided once for the whole job from what its first bundle's
// precombine kept (executor.UnliftSwitch). Where keys seldom repeat, the
// lifted form only adds work: each input becomes an accumulator that is
// encoded, shuffled, decoded and merged, and converting (ConvertDescriptor)
// saves only the precombine's cache. Unlifted, the raw values cross the
// shuffle and the SDK combines each key's values once, after it.
//
// Unlike converting, unlifting changes what crosses the shuffle, so it is
// all or nothing for the combine: its producer, group-by-key and consumer
// switch together, before anything reaches the shuffle. It is offered only
// where that is simple to keep: one precombine in a stage that holds no
// user state, asks no finalization and needs no stable input; a bounded
// input; a group-by-key that neither triggers nor merges windows, read by
// one SDK stage that merges and extracts and does nothing else lifted.
type Unlift struct {
	// Combine is the composite transform.
	Combine    string
	Precombine Precombine
	Producer   StageID
	GroupByKey StageID
	Consumer   StageID
	// Raw is the combine's input as it then crosses to the group-by-key,
	// and Grouped the group-by-key's output as the consumer then reads it;
	// they replace Precombine.Output and the grouped accumulators.
	Raw, Grouped *PColl

	accGrouped     string   // the lifted group-by-key's output
	merge, extract string   // the lifted steps after the shuffle
	combine        string   // the composite's own step after its group-by-key
	dropped        []string // the lifted form's PCollections inside the consumer
}

// unlifts lists the lifted combines that may run unlifted.
func (b *builder) unlifts(plan *Plan) ([]*Unlift, error) {
	readers := map[string][]*Stage{}
	for _, s := range plan.Stages {
		for _, in := range s.Inputs {
			readers[in.PColl] = append(readers[in.PColl], s)
		}
	}
	role := map[StageID]bool{} // a stage plays one part in one unlift
	var out []*Unlift
	for _, s := range plan.Stages {
		u := b.unlift(plan, s, readers, role)
		if u == nil {
			continue
		}
		var err error
		if u.Raw, err = b.pcoll(b.lifted[u.Combine].in, u.Producer); err != nil {
			return nil, err
		}
		if u.Grouped, err = b.pcoll(b.lifted[u.Combine].grouped, u.GroupByKey); err != nil {
			return nil, err
		}
		if acc := plan.PColls[u.accGrouped]; acc.HeldReaders > 0 {
			if c := b.stateBackedWireCoder(u.Grouped); c != "" {
				u.Grouped.HeldReaders, u.Grouped.SourceCoder = acc.HeldReaders, c
			}
		}
		role[u.Producer], role[u.GroupByKey], role[u.Consumer] = true, true, true
		out = append(out, u)
	}
	return out, nil
}

// unlift returns producer s's combine as an Unlift, or nil when it may not
// run unlifted.
func (b *builder) unlift(plan *Plan, s *Stage, readers map[string][]*Stage, role map[StageID]bool) *Unlift {
	if s.Kind != KindSDK || len(s.Precombines) != 1 || s.Stateful != nil || s.Finalize || s.StableInput || role[s.ID] {
		return nil
	}
	pc := s.Precombines[0]
	combine, ok := strings.CutSuffix(pc.Transform, "/Precombine")
	lc, lifted := b.lifted[combine]
	if !ok || !lifted || b.comps.Pcollections[lc.in].GetIsBounded() != pipepb.IsBounded_BOUNDED {
		return nil
	}
	u := &Unlift{Combine: combine, Precombine: pc, Producer: s.ID, accGrouped: combine + "/grouped",
		merge: combine + "/MergeAccumulators", extract: combine + "/ExtractOutputs", combine: lc.combine}
	gs := readers[pc.Output]
	if len(gs) != 1 || gs[0].Kind != KindGBK || gs[0].Triggered || gs[0].Merging || role[gs[0].ID] ||
		len(gs[0].Outputs) != 1 || gs[0].Outputs[0] != u.accGrouped {
		return nil
	}
	u.GroupByKey = gs[0].ID
	cs := readers[u.accGrouped]
	if len(cs) != 1 || cs[0].Kind != KindSDK || cs[0].SDF || cs[0].Stateful != nil || cs[0].StableInput ||
		len(cs[0].Inputs) != 1 || cs[0].MainInput() != u.accGrouped || role[cs[0].ID] ||
		b.stageOf[u.merge] != cs[0] || b.stageOf[u.extract] != cs[0] {
		return nil
	}
	merged := combine + "/merged"
	if _, crosses := plan.PColls[merged]; crosses {
		return nil
	}
	u.Consumer, u.dropped = cs[0].ID, []string{u.accGrouped, merged}
	return u
}

// ProducerDescriptor builds the unlifted twin of the producer's
// descriptor: the precombine is gone and its input goes to the shuffle.
func (p *Plan) ProducerDescriptor(u *Unlift, s *Stage, endpoint *pipepb.ApiServiceDescriptor) (*fnpb.ProcessBundleDescriptor, error) {
	d, err := p.Descriptor(s, endpoint)
	if err != nil {
		return nil, err
	}
	d.Id = string(s.ID) + "/unlifted"
	delete(d.Transforms, u.Precombine.Transform)
	delete(d.Pcollections, u.Precombine.Output)
	d.Pcollections[u.Raw.ID].CoderId = p.wireElement(u.Raw.WireCoder)
	sink := s.Sinks[u.Precombine.Output]
	if d.Transforms[sink], err = dataPort(URNDataSink, sink, u.Raw.ID, u.Raw.WireCoder, endpoint); err != nil {
		return nil, err
	}
	return d, nil
}

// ConsumerDescriptor builds the unlifted twin of the consumer's
// descriptor: the merge and extract steps give way to the composite's own
// step, which combines each key's grouped values. With convert, the
// consumer's own precombines (of later combines) convert, as in
// ConvertDescriptor.
func (p *Plan) ConsumerDescriptor(u *Unlift, s *Stage, endpoint *pipepb.ApiServiceDescriptor, convert bool) (*fnpb.ProcessBundleDescriptor, error) {
	d, err := p.Descriptor(s, endpoint)
	if err != nil {
		return nil, err
	}
	d.Id = string(s.ID) + "/unlifted"
	if convert {
		d.Id += "/convert"
		convertPrecombines(d, s)
	}
	delete(d.Transforms, u.merge)
	delete(d.Transforms, u.extract)
	for _, pc := range u.dropped {
		delete(d.Pcollections, pc)
	}
	d.Transforms[u.combine] = p.Components.Transforms[u.combine]
	grouped := proto.Clone(p.Components.Pcollections[u.Grouped.ID]).(*pipepb.PCollection)
	grouped.CoderId = p.wireElement(u.Grouped.WireCoder)
	d.Pcollections[u.Grouped.ID] = grouped
	if d.Transforms[s.Source], err = dataPort(URNDataSource, s.Source, u.Grouped.ID, u.Grouped.sourceCoder(), endpoint); err != nil {
		return nil, err
	}
	return d, nil
}

// wireElement returns the element coder of a windowed-value wire coder.
func (p *Plan) wireElement(wireCoder string) string {
	return p.Components.Coders[wireCoder].GetComponentCoderIds()[0]
}
