package connector

import (
	"errors"
	"fmt"
	"slices"
)

// Connector is a runner-native transform.
type Connector interface {
	// URN is the transform URN it runs.
	URN() string
	// Decode checks transform t (payload, inputs, outputs, coders) and
	// decodes its payload, once, at submission. Errors say what is wrong,
	// not which transform: the caller names it and its URN.
	Decode(t *Transform) (Config, []error)
}

// Config is a checked transform, decoded: what the plan's stage carries.
type Config interface {
	// Placement says how the stage runs.
	Placement() Placement
	// Build makes the stage's executor node.
	Build(b *BuildContext) (Node, error)
}

// Placement says how a connector's stage runs. The zero value is a stage
// of the job's parallelism whose inputs are forwarded, keeping no state.
type Placement struct {
	// Parallelism is the number of subtasks; 0 is the job's. A source that
	// computes one watermark over all its splits runs as one subtask.
	Parallelism int
	// Keyed partitions the inputs by key (they must be KVs), as a
	// group-by-key's are.
	Keyed bool
	// Store says the subtasks keep state in the job's store under their
	// namespace (BuildContext.Namespace), which every checkpoint exports
	// and a restore imports: a two-phase sink's pending output.
	Store bool
	// Serial runs the whole job one subtask per stage: parallel subtasks
	// would reorder what the connector emits in an order that matters (a
	// TestStream's elements against its processing-time advances).
	Serial bool
}

// Parallel is implemented by the Config of a source that can read as
// several subtasks, each its share of the input (a Kafka read's
// partitions): when its own configuration sets no parallelism, the job's
// source parallelism (translate.Options.SourceParallelism) does.
type Parallel interface {
	// DefaultParallelism sets the subtasks the source runs as unless its
	// configuration sets them. n is positive.
	DefaultParallelism(n int)
}

// OutputCoder is implemented by connectors whose output elements are
// encoded in a coder their payload names rather than their output
// PCollection's (Python's TestStream, typed by hints). Translate then
// gives the transform an output of that coder, read by an SDK-side step
// that re-encodes into the PCollection's coder. ok false: no such coder.
type OutputCoder interface {
	OutputCoder(t *Transform) (coder string, ok bool)
}

// Paths is implemented by connectors whose transforms read or write
// files: a server confined to some folders refuses, when the job is
// prepared, one whose paths lie outside them. It reads the payload only,
// so that a path outside is refused even in a transform that is wrong
// otherwise (Decode says how, later).
type Paths interface {
	// Paths returns each path of t with what it is ("dir"); an error when
	// the payload does not decode.
	Paths(t *Transform) (map[string]string, error)
}

// Registry is the set of connectors a runner knows, by URN.
type Registry struct {
	byURN map[string]Connector
}

// NewRegistry returns a registry of cs; two connectors of one URN are an
// error.
func NewRegistry(cs ...Connector) (*Registry, error) {
	r := &Registry{byURN: map[string]Connector{}}
	var errs []error
	for _, c := range cs {
		if c.URN() == "" {
			errs = append(errs, fmt.Errorf("connector: %T has no URN", c))
			continue
		}
		if prev, dup := r.byURN[c.URN()]; dup {
			errs = append(errs, fmt.Errorf("connector: URN %s is claimed by %T and %T", c.URN(), prev, c))
			continue
		}
		r.byURN[c.URN()] = c
	}
	return r, errors.Join(errs...)
}

// MustRegistry is NewRegistry for lists fixed in code: it panics on an
// error, at start-up.
func MustRegistry(cs ...Connector) *Registry {
	r, err := NewRegistry(cs...)
	if err != nil {
		panic(err)
	}
	return r
}

// Lookup returns the connector of urn. A nil registry has none.
func (r *Registry) Lookup(urn string) (Connector, bool) {
	if r == nil {
		return nil, false
	}
	c, ok := r.byURN[urn]
	return c, ok
}

// URNs returns the URNs of the registry's connectors, sorted.
func (r *Registry) URNs() []string {
	if r == nil {
		return nil
	}
	var out []string
	for u := range r.byURN {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}
