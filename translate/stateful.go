package translate

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/wire"
)

// URNTimerCoder is Beam's timer coder; its components are the key and
// window coders.
const URNTimerCoder = "beam:coder:timer:v1"

// Stateful describes the one transform of a stage that uses user state or
// timers. Such a transform roots its stage, and the stage's main input is
// partitioned by key so each key's state and timers live in one subtask.
type Stateful struct {
	TransformID string
	StateIDs    []string
	Timers      []TimerFamily
	// OrderedLists measures the elements of each ordered-list state, by
	// state id: the runner stores ordered-list entries one by one.
	OrderedLists map[string]wire.Measure
	// AllowedLateness of the main input's windowing: state of a window is
	// collected once the watermark passes the window's end plus this.
	AllowedLateness mtime.Time // a duration in milliseconds
	// WindowExpiration is the timer family of the transform's
	// OnWindowExpiration callback (the payload's
	// on_window_expiration_timer_family_spec), "" when it has none. The
	// SDK never sets timers of it: the runner fires one for each key and
	// window the transform saw input in, once the window expires.
	WindowExpiration string
}

// TimerFamily is one timer family of a stateful transform.
type TimerFamily struct {
	ID             string
	ProcessingTime bool
	Codec          *wire.TimerCodec
}

func isStateful(pd *pipepb.ParDoPayload) bool {
	return len(pd.GetStateSpecs()) > 0 || len(pd.GetTimerFamilySpecs()) > 0 ||
		pd.GetOnWindowExpirationTimerFamilySpec() != ""
}

// stateful prepares transform id's state and timer specs for the runner:
// coders the runner must split are rewritten with length prefixes where it
// cannot measure them (the SDK reads the rewritten specs from the
// descriptor), and their measures recorded.
func (b *builder) stateful(id string) (*Stateful, error) {
	t := b.comps.Transforms[id]
	pd := b.pardo(id)
	st := &Stateful{TransformID: id, OrderedLists: map[string]wire.Measure{}}
	_, main := b.mainInput(id)
	ws := b.comps.WindowingStrategies[b.comps.Pcollections[main].GetWindowingStrategyId()]
	st.AllowedLateness = mtime.Time(ws.GetAllowedLateness())
	win, err := wire.MeasureFor(b.comps.Coders, ws.GetWindowCoderId())
	if err != nil {
		return nil, fmt.Errorf("transform %s: window coder: %w", b.name(id), err)
	}
	st.StateIDs = sortedKeys(pd.GetStateSpecs())
	for _, sid := range st.StateIDs {
		ol := pd.GetStateSpecs()[sid].GetOrderedListSpec()
		if ol == nil {
			continue
		}
		// Every entry goes on the wire as a varint sort key and then the
		// element; Python's harness always length-prefixes the element, a
		// known coder included, while Go's encodes it with the coder as
		// declared. Declaring a length-prefixed element coder makes the
		// two frames one: the runner measures the prefix, whatever is in it.
		ol.ElementCoderId = b.lengthPrefixed(b.lp(ol.GetElementCoderId()))
		m, err := wire.MeasureFor(b.comps.Coders, ol.GetElementCoderId())
		if err != nil {
			return nil, fmt.Errorf("transform %s: ordered list state %s: %w", b.name(id), sid, err)
		}
		st.OrderedLists[sid] = m
	}
	for _, fid := range sortedKeys(pd.GetTimerFamilySpecs()) {
		spec := pd.GetTimerFamilySpecs()[fid]
		c := b.comps.Coders[spec.GetTimerFamilyCoderId()]
		if c.GetSpec().GetUrn() != URNTimerCoder || len(c.GetComponentCoderIds()) != 2 {
			return nil, fmt.Errorf("transform %s: timer family %s: coder %q is not a timer coder", b.name(id), fid, spec.GetTimerFamilyCoderId())
		}
		keyID := b.lp(c.GetComponentCoderIds()[0])
		if keyID != c.GetComponentCoderIds()[0] {
			spec.TimerFamilyCoderId = b.addCoder(spec.GetTimerFamilyCoderId()+"_lp", URNTimerCoder, keyID, c.GetComponentCoderIds()[1])
		}
		key, err := wire.MeasureFor(b.comps.Coders, keyID)
		if err != nil {
			return nil, fmt.Errorf("transform %s: timer family %s: key coder: %w", b.name(id), fid, err)
		}
		var proc bool
		switch d := spec.GetTimeDomain(); d {
		case pipepb.TimeDomain_EVENT_TIME:
		case pipepb.TimeDomain_PROCESSING_TIME:
			proc = true
		default:
			return nil, fmt.Errorf("transform %s: timer family %s: time domain %v is not supported", b.name(id), fid, d)
		}
		st.Timers = append(st.Timers, TimerFamily{ID: fid, ProcessingTime: proc,
			Codec: &wire.TimerCodec{Key: key, Window: win}})
	}
	if err := b.windowExpiration(id, pd, st); err != nil {
		return nil, err
	}
	pl, err := proto.Marshal(pd)
	if err != nil {
		return nil, fmt.Errorf("transform %s: %w", b.name(id), err)
	}
	t = proto.Clone(t).(*pipepb.PTransform)
	t.Spec.Payload = pl
	b.comps.Transforms[id] = t
	return st, nil
}

// windowExpiration reads the family of the OnWindowExpiration callback:
// one of the payload's timer families, in event time (Java declares it so,
// and it fires by the watermark).
func (b *builder) windowExpiration(id string, pd *pipepb.ParDoPayload, st *Stateful) error {
	fid := pd.GetOnWindowExpirationTimerFamilySpec()
	if fid == "" {
		return nil
	}
	spec, ok := pd.GetTimerFamilySpecs()[fid]
	if !ok {
		return fmt.Errorf("transform %s: the OnWindowExpiration timer family %q is not one of its timer families", b.name(id), fid)
	}
	if d := spec.GetTimeDomain(); d != pipepb.TimeDomain_EVENT_TIME {
		return fmt.Errorf("transform %s: the OnWindowExpiration timer family %q is in time domain %v, not event time", b.name(id), fid, d)
	}
	st.WindowExpiration = fid
	return nil
}
