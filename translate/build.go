package translate

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/wire"
)

// Options change how a pipeline is translated.
type Options struct {
	// NoLift runs every combine unlifted, as its composite's own
	// GroupByKey and ParDo: for comparisons and as an escape hatch.
	NoLift bool
	// FixedPrecombine keeps lifted combines precombining in every bundle;
	// otherwise each stage lists its precombines (Stage.Precombines) and
	// the runner converts instead where they do not reduce.
	FixedPrecombine bool
	// NoUnlift keeps lifted combines lifted: without it, the plan lists
	// those the runner may run unlifted after all (Plan.Unlifts).
	NoUnlift bool
	// Connectors are the runner-native transforms weir runs besides the
	// model's primitives; a transform of another URN runs in an SDK or is
	// refused.
	Connectors *connector.Registry
	// SourceParallelism, when positive, is the subtasks of every connector
	// source that reads in shares (connector.Parallel) and whose own
	// configuration sets none.
	SourceParallelism int
}

// Build validates p and turns it into a plan. Every problem found is
// reported, each naming its transform and URN.
func Build(p *pipepb.Pipeline, opts Options) (*Plan, error) {
	if p.GetComponents() == nil {
		return nil, errors.New("translate: pipeline has no components")
	}
	b := &builder{
		comps:     proto.Clone(p.GetComponents()).(*pipepb.Components),
		lpMemo:    map[string]string{},
		stageOf:   map[string]*Stage{},
		rooted:    map[string]*Stage{},
		truncates: map[string]*Truncate{},
		noLift:    opts.NoLift,
		fixedPre:  opts.FixedPrecombine,
		noUnlift:  opts.NoUnlift || opts.FixedPrecombine,
		lifted:    map[string]liftedCombine{},
		sdkSide:   map[string]bool{},
		conns:     opts.Connectors,
		natives:   map[string]connector.Config{},
	}
	if b.comps.Coders == nil {
		b.comps.Coders = map[string]*pipepb.Coder{}
	}
	var errs []error
	errs = append(errs, checkRequirements(p.GetRequirements())...)
	leaves, err := b.leaves(p.GetRootTransformIds())
	if err != nil {
		return nil, err
	}
	if leaves, err = b.recodeFlattenInputs(leaves); err != nil {
		return nil, err
	}
	if leaves, err = b.recodeNativeOutputs(leaves); err != nil {
		return nil, err
	}
	leaves = b.expandSDFs(leaves)
	b.setProducers(leaves)
	for _, id := range leaves {
		errs = append(errs, b.validateLeaf(id)...)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("translate: pipeline not supported by weir:\n  %w", joinErrs(errs))
	}
	for _, id := range leaves {
		if cfg, ok := b.natives[id]; ok {
			if p, ok := cfg.(connector.Parallel); ok && opts.SourceParallelism > 0 {
				p.DefaultParallelism(opts.SourceParallelism)
			}
			b.placeNative(id, cfg)
		} else {
			b.place(id)
		}
	}
	if len(b.errs) > 0 {
		return nil, fmt.Errorf("translate: pipeline not supported by weir:\n  %w", joinErrs(b.errs))
	}
	plan, err := b.finish()
	if err != nil {
		return nil, err
	}
	return plan, nil
}

type joined []error

func (j joined) Error() string {
	s := make([]string, len(j))
	for i, e := range j {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n  ")
}

func (j joined) Unwrap() []error { return j }

func joinErrs(errs []error) error { return joined(errs) }

func checkRequirements(reqs []string) []error {
	var errs []error
	for _, r := range reqs {
		switch r {
		case URNReqSplittable, URNReqFinalization, URNReqStableInput, URNReqStateful, URNReqWindowExpiry:
		default:
			errs = append(errs, fmt.Errorf("pipeline requirement %s is not supported", r))
		}
	}
	return errs
}

type builder struct {
	comps  *pipepb.Components
	lpMemo map[string]string

	stages  []*Stage
	stageOf map[string]*Stage // transform ID → its stage
	// rooted holds, per runner PCollection and environment, the stage of
	// plain SDK transforms that read it, so siblings share one stage.
	rooted map[string]*Stage
	sdfSeq int
	// producer maps each PCollection to the leaf transform that writes it,
	// once SDFs are expanded.
	producer map[string]string
	// noLift runs every combine unlifted (Options.NoLift).
	noLift bool
	// fixedPre leaves Stage.Precombines empty (Options.FixedPrecombine).
	fixedPre bool
	// noUnlift leaves Plan.Unlifts empty (Options.NoUnlift).
	noUnlift bool
	// lifted holds the unlifted forms of the lifted combines, by composite.
	lifted map[string]liftedCombine
	// errs collects what placing transforms finds wrong.
	errs []error
	// truncates maps each SDF process transform to its truncation step.
	truncates map[string]*Truncate
	// sdkSide marks transforms of runner-native URNs that run in an SDK
	// all the same (the Flattens that convert coders, flatten.go).
	sdkSide map[string]bool
	// conns are the connectors (Options.Connectors); natives holds each
	// connector transform's decoded configuration (native.go).
	conns   *connector.Registry
	natives map[string]connector.Config
}

// leaves returns the leaf transforms under roots in topological order.
//
// A transform is walked once: a pipeline from outside may name a
// transform among its own parts, directly or further down, which would
// recurse until the stack overflows and takes the server with it (found by
// FuzzBuild), or name one part under several composites.
func (b *builder) leaves(roots []string) ([]string, error) {
	var all []string
	state := map[string]int{} // 1: on the walk's path; 2: walked
	var walk func(id string) error
	walk = func(id string) error {
		switch state[id] {
		case 1:
			return fmt.Errorf("translate: transform %q contains itself through its subtransforms", id)
		case 2:
			return nil
		}
		state[id] = 1
		defer func() { state[id] = 2 }()
		t, ok := b.comps.GetTransforms()[id]
		if !ok {
			return fmt.Errorf("translate: transform %q is referenced but not defined", id)
		}
		// A reshuffle runs natively: the runner redistributes the elements
		// itself, and skips the SDK's expansion with its Always trigger.
		if len(t.GetSubtransforms()) == 0 && passesThrough(t) {
			return nil
		}
		if len(t.GetSubtransforms()) == 0 || t.GetSpec().GetUrn() == URNReshuffle {
			all = append(all, id)
			return nil
		}
		if t.GetSpec().GetUrn() == URNCombinePerKey && !b.noLift {
			if ids := b.lift(id, t); ids != nil {
				all = append(all, ids...)
				return nil
			}
		}
		for _, sub := range t.GetSubtransforms() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range roots {
		if err := walk(r); err != nil {
			return nil, err
		}
	}
	return b.topoSort(all)
}

// passesThrough reports whether a transform with no parts only hands on
// what it reads: each output is one of its inputs. Python leaves such
// composites where an expansion chose to do nothing (Create's
// MaybeReshuffle without pre-optimization, as in streaming); there is
// nothing to run, and kept as a leaf it would read its own output.
func passesThrough(t *pipepb.PTransform) bool {
	if len(t.GetOutputs()) == 0 {
		return false
	}
	for _, out := range t.GetOutputs() {
		found := false
		for _, in := range t.GetInputs() {
			found = found || in == out
		}
		if !found {
			return false
		}
	}
	return true
}

func (b *builder) topoSort(ids []string) ([]string, error) {
	producer := map[string]string{}
	for _, id := range ids {
		for _, pc := range b.comps.Transforms[id].GetOutputs() {
			producer[pc] = id
		}
	}
	sort.Strings(ids)
	done := map[string]bool{}
	visiting := map[string]bool{}
	var out []string
	var visit func(id string) error
	visit = func(id string) error {
		if done[id] {
			return nil
		}
		if visiting[id] {
			return fmt.Errorf("translate: transform %s is part of a cycle", b.name(id))
		}
		visiting[id] = true
		for _, pc := range sortedValues(b.comps.Transforms[id].GetInputs()) {
			if p, ok := producer[pc]; ok {
				if err := visit(p); err != nil {
					return err
				}
			} else if _, ok := b.comps.Pcollections[pc]; !ok {
				return fmt.Errorf("translate: transform %s reads PCollection %q, which is not defined", b.name(id), pc)
			} else {
				return fmt.Errorf("translate: transform %s reads PCollection %q, which nothing produces", b.name(id), pc)
			}
		}
		visiting[id] = false
		done[id] = true
		out = append(out, id)
		return nil
	}
	for _, id := range ids {
		if err := visit(id); err != nil {
			return nil, err
		}
	}
	return out, nil
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

func (b *builder) name(id string) string {
	if t, ok := b.comps.Transforms[id]; ok && t.GetUniqueName() != "" {
		return fmt.Sprintf("%q", t.GetUniqueName())
	}
	return fmt.Sprintf("%q", id)
}

// pardo decodes a transform's ParDo payload, or returns nil.
func (b *builder) pardo(id string) *pipepb.ParDoPayload {
	t := b.comps.Transforms[id]
	switch t.GetSpec().GetUrn() {
	case URNParDo, URNPairWithRestr, URNSplitAndSize, URNProcessSized:
	default:
		return nil
	}
	var pl pipepb.ParDoPayload
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil {
		return nil
	}
	return &pl
}

// mainInput returns the local name and PCollection of a transform's main
// input: its one input that is not a side input.
func (b *builder) mainInput(id string) (local, pcoll string) {
	t := b.comps.Transforms[id]
	side := b.pardo(id).GetSideInputs()
	for _, l := range sortedKeys(t.GetInputs()) {
		if _, ok := side[l]; !ok {
			return l, t.GetInputs()[l]
		}
	}
	return "", ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// lp returns a coder equal to id with every coder the runner cannot measure
// wrapped in a length prefix, adding it to the components if new.
func (b *builder) lp(id string) string {
	if v, ok := b.lpMemo[id]; ok {
		return v
	}
	c := b.comps.Coders[id]
	urn := c.GetSpec().GetUrn()
	out := id
	switch {
	case urn == wire.URNLengthPrefix:
	case !wire.Known(urn):
		out = b.addCoder(id+"_lp", wire.URNLengthPrefix, id)
	default:
		comps := make([]string, len(c.GetComponentCoderIds()))
		changed := false
		for i, cc := range c.GetComponentCoderIds() {
			comps[i] = b.lp(cc)
			changed = changed || comps[i] != cc
		}
		if changed {
			out = b.addCoder(id+"_lp", urn, comps...)
		}
	}
	b.lpMemo[id] = out
	return out
}

// lengthPrefixed returns coder id wrapped in a length prefix, unless it
// already is one.
func (b *builder) lengthPrefixed(id string) string {
	if b.comps.Coders[id].GetSpec().GetUrn() == wire.URNLengthPrefix {
		return id
	}
	return b.addCoder(id+"_lp", wire.URNLengthPrefix, id)
}

func (b *builder) addCoder(id, urn string, comps ...string) string {
	for {
		if _, taken := b.comps.Coders[id]; !taken {
			break
		}
		id += "_"
	}
	b.comps.Coders[id] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
	return id
}
