package translate

import (
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/wire"
)

// StageID names a stage within a plan.
type StageID string

// Kind is what runs a stage.
type Kind int

// Stage kinds.
const (
	KindImpulse Kind = iota // runner: emits one empty element
	KindSDK                 // fused transforms run by an SDK worker
	KindGBK                 // runner: group by key and window
	KindFlatten             // runner: merge inputs
	KindNative              // runner: a connector's transform (Stage.Native)
)

func (k Kind) String() string {
	return [...]string{"impulse", "sdk", "gbk", "flatten", "native"}[k]
}

// Plan is a pipeline as weir executes it.
type Plan struct {
	// Stages in topological order: every stage comes after the producers of
	// its inputs.
	Stages []*Stage
	// PColls are the runner PCollections: those that cross stage boundaries.
	PColls map[string]*PColl
	// Components are the pipeline's, after SDF expansion and with the wire
	// coders added.
	Components *pipepb.Components
	// Unlifts are the lifted combines the runner may run unlifted after
	// all (unlift.go).
	Unlifts []*Unlift
}

// PColl is a PCollection the runner moves between stages.
type PColl struct {
	ID   string
	Name string
	// WireCoder is the windowed-value coder its elements travel in.
	WireCoder string
	Codec     *wire.Codec
	// Key measures the key of KV elements; nil for other elements.
	Key       wire.Measure
	Windowing *pipepb.WindowingStrategy
	Producer  StageID
	// HeldReaders, when not zero, says the PCollection is a group-by-key's
	// output that may hand large groups out as state-backed iterables, and
	// how many stages read it (each releases every such group once).
	// SourceCoder is then the wire coder SDK data sources are told, its
	// iterable marked state-backed.
	HeldReaders int
	SourceCoder string
}

// Input is one input of a stage.
type Input struct {
	PColl string
	// Side is set for a side input.
	Side *SideInput
}

// SideInput identifies a side input as the SDK's state requests name it.
type SideInput struct {
	TransformID string
	LocalName   string
	Pattern     string // URNSideIterable or URNSideMultimap
	// Size, Period and Offset (milliseconds) describe the side input's
	// fixed (Period 0) or sliding windows, so the runner knows when a side
	// window is complete. Size 0: the global window, or a window function
	// the runner does not interpret; such a side input is complete when it
	// ends.
	Size, Period, Offset int64
}

// Stage is a unit of execution: parallel subtasks of one kind.
type Stage struct {
	ID   StageID
	Kind Kind
	// Name is a human name for messages: the first transform's unique name.
	Name string
	// Transforms are the pipeline transforms the stage runs.
	Transforms []string
	// Inputs: for SDK stages the main input first, then side inputs; for
	// flattens every input; for GBK the one input.
	Inputs []Input
	// Outputs are the runner PCollections the stage produces.
	Outputs []string

	// SDK stages.
	EnvID string
	// Source is the descriptor's data source transform for the main input;
	// Sinks maps each output PCollection to its data sink transform.
	Source string
	Sinks  map[string]string
	// SDF is set when the stage processes SDF restrictions: its residuals
	// re-enter as main input.
	SDF bool
	// Finalize is set when the stage's DoFns ask for bundle finalization.
	Finalize bool
	// StableInput is set when the stage's first ParDo requires stable
	// input: its main input must be covered by a completed checkpoint
	// before the stage sees it.
	StableInput bool
	// Precombines are the lifted combines' precombine steps the stage
	// runs; the runner may run them as ConvertDescriptor's one-by-one
	// conversions instead (liftswitch.go).
	Precombines []Precombine
	// Truncate is set for SDF stages: how to truncate their restrictions
	// when the job is drained.
	Truncate *Truncate
	// Stateful is set when the stage's first transform uses user state or
	// timers; its main input is then partitioned by key.
	Stateful *Stateful

	// GBK stages.
	OutputTime pipepb.OutputTime_Enum
	// Merging is set when the input's windows merge (sessions): the runner
	// merges them before grouping.
	Merging bool
	// Triggered is set when the group needs trigger state machines: a
	// trigger other than the default, or allowed lateness. Otherwise each
	// (key, window) fires once, from the shuffle buffer.
	Triggered bool
	// Trigger, Accumulating and AllowedLateness (milliseconds) are the
	// input's windowing strategy, for triggered groups.
	Trigger         *pipepb.Trigger
	Accumulating    bool
	AllowedLateness int64
	// FinalAlways and OnTimeAlways: the strategy's closing behavior is
	// EMIT_ALWAYS, its on-time behavior FIRE_ALWAYS (panes with nothing new
	// still fire).
	FinalAlways, OnTimeAlways bool

	// Native stages: the connector's transform, decoded, and its URN.
	Native connector.Config
	URN    string
}

// MainInput is the stage's main input PCollection, or "".
func (s *Stage) MainInput() string {
	for _, in := range s.Inputs {
		if in.Side == nil {
			return in.PColl
		}
	}
	return ""
}
