package translate

import (
	"fmt"
	"sort"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/wire"
)

// place assigns one leaf transform to a stage, creating it if need be.
// Leaves arrive in topological order.
func (b *builder) place(id string) {
	t := b.comps.Transforms[id]
	urn := t.GetSpec().GetUrn()
	if isNative(urn) && !b.sdkSide[id] {
		s := b.newStage(id, map[string]Kind{URNImpulse: KindImpulse, URNGBK: KindGBK, URNFlatten: KindFlatten, URNReshuffle: KindFlatten}[urn])
		for _, pc := range sortedValues(t.GetInputs()) {
			s.Inputs = append(s.Inputs, Input{PColl: pc})
		}
		if urn == URNGBK {
			pc := b.comps.Pcollections[t.GetInputs()[sortedKeys(t.GetInputs())[0]]]
			ws := b.comps.WindowingStrategies[pc.GetWindowingStrategyId()]
			s.OutputTime = ws.GetOutputTime()
			s.Merging = ws.GetWindowFn().GetUrn() == URNSessions
			s.Trigger = ws.GetTrigger()
			s.Accumulating = ws.GetAccumulationMode() == pipepb.AccumulationMode_ACCUMULATING
			s.AllowedLateness = ws.GetAllowedLateness()
			s.FinalAlways = ws.GetClosingBehavior() == pipepb.ClosingBehavior_EMIT_ALWAYS
			s.OnTimeAlways = ws.GetOnTimeBehavior() == pipepb.OnTimeBehavior_FIRE_ALWAYS
			s.Triggered = !isDefaultTrigger(ws.GetTrigger()) || ws.GetAllowedLateness() > 0
		}
		return
	}
	pd := b.pardo(id)
	_, main := b.mainInput(id)
	env := b.env(id)
	if isStateful(pd) {
		s := b.newSDKStage(id, main, env)
		s.StableInput = pd.GetRequiresStableInput()
		b.addSideInputs(s, id)
		st, err := b.stateful(id)
		if err != nil {
			b.errs = append(b.errs, err)
			return
		}
		s.Stateful = st
		return
	}
	if pd.GetRequiresStableInput() && urn != URNProcessSized {
		// Fusion breaks here: the stage's input must be the ParDo's own,
		// held until a checkpoint covers it (runner/commit.go).
		s := b.newSDKStage(id, main, env)
		s.StableInput = true
		b.addSideInputs(s, id)
		return
	}
	if urn != URNProcessSized {
		if up := b.stageOfProducer(main); up != nil && up.Kind == KindSDK && up.EnvID == env && b.sidesAvailable(up, id) {
			b.join(up, id)
			b.addSideInputs(up, id)
			return
		}
		if len(pd.GetSideInputs()) == 0 {
			key := main + "\x00" + env
			if s, ok := b.rooted[key]; ok {
				b.join(s, id)
				return
			}
			b.rooted[key] = b.newSDKStage(id, main, env)
			return
		}
	}
	s := b.newSDKStage(id, main, env)
	s.SDF = urn == URNProcessSized
	s.Truncate = b.truncates[id]
	b.addSideInputs(s, id)
}

// sidesAvailable reports whether transform id can run in stage s: each of
// its side inputs must come from a stage that does not read from s, or the
// stage would wait for itself.
func (b *builder) sidesAvailable(s *Stage, id string) bool {
	t := b.comps.Transforms[id]
	for local := range b.pardo(id).GetSideInputs() {
		up := b.stageOfProducer(t.GetInputs()[local])
		if up == nil || b.dependsOn(up, s, map[*Stage]bool{}) {
			return false
		}
	}
	return true
}

// dependsOn reports whether stage x reads, directly or not, from stage s.
func (b *builder) dependsOn(x, s *Stage, seen map[*Stage]bool) bool {
	if x == s {
		return true
	}
	if seen[x] {
		return false
	}
	seen[x] = true
	for _, tid := range x.Transforms {
		for _, pc := range b.comps.Transforms[tid].GetInputs() {
			if up := b.stageOfProducer(pc); up != nil && up != x && b.dependsOn(up, s, seen) {
				return true
			}
		}
	}
	return false
}

func (b *builder) addSideInputs(s *Stage, id string) {
	t := b.comps.Transforms[id]
	pd := b.pardo(id)
	for _, local := range sortedKeys(pd.GetSideInputs()) {
		pc := t.GetInputs()[local]
		side := &SideInput{TransformID: id, LocalName: local,
			Pattern: pd.GetSideInputs()[local].GetAccessPattern().GetUrn()}
		ws := b.comps.WindowingStrategies[b.comps.Pcollections[pc].GetWindowingStrategyId()]
		side.Size, side.Period, side.Offset = sideWindows(ws.GetWindowFn())
		s.Inputs = append(s.Inputs, Input{PColl: pc, Side: side})
	}
}

// sideWindows reads a side input's fixed or sliding window function; any
// other gives zeros, and the side input is then complete only at its end.
func sideWindows(fn *pipepb.FunctionSpec) (size, period, offset int64) {
	switch fn.GetUrn() {
	case URNFixedWindows:
		var p pipepb.FixedWindowsPayload
		if proto.Unmarshal(fn.GetPayload(), &p) == nil && p.GetSize().AsDuration() > 0 {
			return p.GetSize().AsDuration().Milliseconds(), 0, p.GetOffset().AsTime().UnixMilli()
		}
	case URNSlidingWindows:
		var p pipepb.SlidingWindowsPayload
		if proto.Unmarshal(fn.GetPayload(), &p) == nil && p.GetSize().AsDuration() > 0 && p.GetPeriod().AsDuration() > 0 {
			return p.GetSize().AsDuration().Milliseconds(), p.GetPeriod().AsDuration().Milliseconds(),
				p.GetOffset().AsTime().UnixMilli()
		}
	}
	return 0, 0, 0
}

func (b *builder) stageOfProducer(pcoll string) *Stage {
	return b.stageOf[b.producer[pcoll]]
}

// setProducers records which leaf writes each PCollection. Only leaves
// count: a lifted combine's original subtransforms stay in the components
// and write the same PCollection as its extract step.
func (b *builder) setProducers(leaves []string) {
	b.producer = map[string]string{}
	for _, id := range leaves {
		for _, out := range b.comps.Transforms[id].GetOutputs() {
			b.producer[out] = id
		}
	}
}

func (b *builder) newStage(id string, k Kind) *Stage {
	s := &Stage{ID: StageID(fmt.Sprintf("s%d", len(b.stages)+1)), Kind: k,
		Name: b.comps.Transforms[id].GetUniqueName()}
	b.stages = append(b.stages, s)
	b.join(s, id)
	return s
}

func (b *builder) newSDKStage(id, main, env string) *Stage {
	s := b.newStage(id, KindSDK)
	s.EnvID = env
	s.Inputs = []Input{{PColl: main}}
	return s
}

func (b *builder) join(s *Stage, id string) {
	s.Transforms = append(s.Transforms, id)
	b.stageOf[id] = s
	if pd := b.pardo(id); pd != nil && pd.GetRequestsFinalization() {
		s.Finalize = true
	}
}

// finish works out which PCollections cross stages, gives them wire coders
// and codecs, and names each SDK stage's data ports.
func (b *builder) finish() (*Plan, error) {
	plan := &Plan{Stages: b.stages, PColls: map[string]*PColl{}, Components: b.comps}
	producer := map[string]*Stage{}
	for _, s := range b.stages {
		for _, tid := range s.Transforms {
			for _, out := range b.comps.Transforms[tid].GetOutputs() {
				producer[out] = s
			}
		}
	}
	cross := map[string]bool{}
	for _, s := range b.stages {
		for _, in := range s.Inputs {
			cross[in.PColl] = true
		}
		if s.Kind != KindSDK { // native outputs always reach the runner
			for _, out := range b.comps.Transforms[s.Transforms[0]].GetOutputs() {
				cross[out] = true
			}
		}
	}
	ids := make([]string, 0, len(cross))
	for id := range cross {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		up := producer[id]
		if up == nil {
			return nil, fmt.Errorf("translate: PCollection %q has no producer", id)
		}
		pc, err := b.pcoll(id, up.ID)
		if err != nil {
			return nil, err
		}
		plan.PColls[id] = pc
		up.Outputs = append(up.Outputs, id)
	}
	if err := b.orderStages(plan); err != nil {
		return nil, err
	}
	b.markHeld(plan)
	for _, s := range b.stages {
		if s.Kind != KindSDK {
			continue
		}
		s.Precombines = b.precombines(s)
		s.Source = "weir/source/" + s.MainInput()
		s.Sinks = map[string]string{}
		for _, out := range s.Outputs {
			s.Sinks[out] = "weir/sink/" + out
		}
	}
	if !b.noUnlift {
		var err error
		if plan.Unlifts, err = b.unlifts(plan); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// orderStages puts every stage after the producers of its inputs. Stages
// are created in transform order, but a stage can gain a side input from a
// stage created after it.
func (b *builder) orderStages(plan *Plan) error {
	byID := map[StageID]*Stage{}
	for _, s := range b.stages {
		byID[s.ID] = s
	}
	state := map[StageID]int{} // 1 visiting, 2 done
	var out []*Stage
	var visit func(s *Stage) error
	visit = func(s *Stage) error {
		switch state[s.ID] {
		case 1:
			return fmt.Errorf("translate: stage %s (%s) depends on itself", s.ID, s.Name)
		case 2:
			return nil
		}
		state[s.ID] = 1
		for _, in := range s.Inputs {
			if err := visit(byID[plan.PColls[in.PColl].Producer]); err != nil {
				return err
			}
		}
		state[s.ID] = 2
		out = append(out, s)
		return nil
	}
	for _, s := range b.stages {
		if err := visit(s); err != nil {
			return err
		}
	}
	b.stages, plan.Stages = out, out
	return nil
}

func (b *builder) pcoll(id string, producer StageID) (*PColl, error) {
	p := b.comps.Pcollections[id]
	ws := b.comps.WindowingStrategies[p.GetWindowingStrategyId()]
	elem := b.lp(p.GetCoderId())
	wireID := b.addCoder("weir_wv_"+id, wire.URNWindowedValue, elem, ws.GetWindowCoderId())
	win, err := wire.MeasureFor(b.comps.Coders, ws.GetWindowCoderId())
	if err != nil {
		return nil, fmt.Errorf("translate: PCollection %q: window coder: %w", p.GetUniqueName(), err)
	}
	val, err := wire.MeasureFor(b.comps.Coders, elem)
	if err != nil {
		return nil, fmt.Errorf("translate: PCollection %q: %w", p.GetUniqueName(), err)
	}
	pc := &PColl{ID: id, Name: p.GetUniqueName(), WireCoder: wireID,
		Codec: wire.NewCodec(win, val), Windowing: ws, Producer: producer}
	if c := b.comps.Coders[elem]; c.GetSpec().GetUrn() == wire.URNKV {
		if pc.Key, err = wire.MeasureFor(b.comps.Coders, c.GetComponentCoderIds()[0]); err != nil {
			return nil, fmt.Errorf("translate: PCollection %q: key: %w", p.GetUniqueName(), err)
		}
	}
	return pc, nil
}

// ElementCoder returns the length-prefixed element coder of a PCollection.
func (p *Plan) elementCoder(pcoll string) string { return p.wireElement(p.PColls[pcoll].WireCoder) }
