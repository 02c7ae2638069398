package triggers

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Kind is the kind of one node of a trigger tree.
type Kind uint8

// Trigger kinds, one per Beam trigger.
const (
	KindDefault      Kind = iota // fires whenever the watermark is past the end of the window
	KindAlways                   // fires after every element; never finishes
	KindNever                    // never fires; the window's final pane comes at expiry
	KindCount                    // fires once after N elements
	KindProcTime                 // fires once at the first element's processing time, transformed
	KindSyncProcTime             // fires once when synchronized processing time passes the first element's
	KindEndOfWindow              // AfterWatermark, with optional early and late firings
	KindRepeat                   // fires its subtrigger forever
	KindAfterAll                 // fires once when every subtrigger is ready
	KindAfterAny                 // fires once when any subtrigger is ready
	KindAfterEach                // fires its subtriggers one after the other
	KindOrFinally                // fires the main trigger until the finally trigger fires
)

var kindNames = [...]string{"Default", "Always", "Never", "AfterCount", "AfterProcessingTime",
	"AfterSynchronizedProcessingTime", "AfterWatermark", "Repeatedly", "AfterAll", "AfterAny",
	"AfterEach", "OrFinally"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// TimestampTransform moves a processing time: by a delay, or up to the next
// multiple of a period after an offset.
type TimestampTransform struct {
	Delay          mtime.Time // milliseconds; 0 for an alignment
	Period, Offset mtime.Time // milliseconds; Period 0 for a delay
}

// Apply transforms t.
func (tt TimestampTransform) Apply(t mtime.Time) mtime.Time {
	if tt.Period <= 0 {
		return min(t+tt.Delay, mtime.MaxTimestamp)
	}
	// The smallest offset + k*period strictly after t.
	d := (t - tt.Offset) % tt.Period
	if d < 0 {
		d += tt.Period
	}
	return min(t-d+tt.Period, mtime.MaxTimestamp)
}

// Trigger is a decoded trigger tree. It is immutable and shared by every
// (key, window); the mutable part lives in a State. Nodes are numbered in
// preorder; node 0 is the root.
type Trigger struct {
	nodes []node
}

type node struct {
	kind       Kind
	subs       []int // child node indexes
	count      int64 // KindCount
	transforms []TimestampTransform
	early      int // KindEndOfWindow: node index or -1
	late       int // KindEndOfWindow: node index or -1
}

// ErrUnsupported is wrapped by FromProto errors for triggers weir cannot run.
var ErrUnsupported = errors.New("triggers: unsupported trigger")

// FromProto decodes a pipeline's trigger. A nil trigger is the default.
func FromProto(p *pipepb.Trigger) (*Trigger, error) {
	t := &Trigger{}
	if _, err := t.add(p); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Trigger) add(p *pipepb.Trigger) (int, error) {
	i := len(t.nodes)
	t.nodes = append(t.nodes, node{early: -1, late: -1})
	n := node{early: -1, late: -1}
	var subs []*pipepb.Trigger
	switch {
	case p == nil || p.GetTrigger() == nil || p.GetDefault() != nil:
		n.kind = KindDefault
	case p.GetAlways() != nil:
		n.kind = KindAlways
	case p.GetNever() != nil:
		n.kind = KindNever
	case p.GetElementCount() != nil:
		n.kind, n.count = KindCount, int64(p.GetElementCount().GetElementCount())
		if n.count < 0 {
			return 0, fmt.Errorf("%w: AfterCount(%d) has a negative count", ErrUnsupported, n.count)
		}
	case p.GetAfterProcessingTime() != nil:
		n.kind = KindProcTime
		for _, tt := range p.GetAfterProcessingTime().GetTimestampTransforms() {
			switch {
			case tt.GetDelay() != nil:
				d := tt.GetDelay().GetDelayMillis()
				if d < 0 {
					return 0, fmt.Errorf("%w: AfterProcessingTime delay %d ms is negative", ErrUnsupported, d)
				}
				n.transforms = append(n.transforms, TimestampTransform{Delay: mtime.Time(d)})
			case tt.GetAlignTo() != nil:
				a := tt.GetAlignTo()
				if a.GetPeriod() <= 0 {
					return 0, fmt.Errorf("%w: AfterProcessingTime alignment period %d ms is not positive", ErrUnsupported, a.GetPeriod())
				}
				n.transforms = append(n.transforms, TimestampTransform{Period: mtime.Time(a.GetPeriod()), Offset: mtime.Time(a.GetOffset())})
			default:
				return 0, fmt.Errorf("%w: AfterProcessingTime timestamp transform %v", ErrUnsupported, tt)
			}
		}
	case p.GetAfterSynchronizedProcessingTime() != nil:
		n.kind = KindSyncProcTime
	case p.GetAfterEndOfWindow() != nil:
		n.kind = KindEndOfWindow
	case p.GetRepeat() != nil:
		n.kind, subs = KindRepeat, []*pipepb.Trigger{p.GetRepeat().GetSubtrigger()}
	case p.GetAfterAll() != nil:
		n.kind, subs = KindAfterAll, p.GetAfterAll().GetSubtriggers()
	case p.GetAfterAny() != nil:
		n.kind, subs = KindAfterAny, p.GetAfterAny().GetSubtriggers()
	case p.GetAfterEach() != nil:
		n.kind, subs = KindAfterEach, p.GetAfterEach().GetSubtriggers()
	case p.GetOrFinally() != nil:
		n.kind, subs = KindOrFinally, []*pipepb.Trigger{p.GetOrFinally().GetMain(), p.GetOrFinally().GetFinally()}
	default:
		return 0, fmt.Errorf("%w: %v", ErrUnsupported, p)
	}
	if n.kind >= KindRepeat && len(subs) == 0 {
		return 0, fmt.Errorf("%w: %v has no subtriggers", ErrUnsupported, n.kind)
	}
	for _, s := range subs {
		if s == nil {
			return 0, fmt.Errorf("%w: %v has a missing subtrigger", ErrUnsupported, n.kind)
		}
		c, err := t.add(s)
		if err != nil {
			return 0, err
		}
		n.subs = append(n.subs, c)
	}
	if n.kind == KindEndOfWindow {
		aw := p.GetAfterEndOfWindow()
		// The Go SDK writes an unset early trigger as Default, which can
		// never fire before the end of the window: the same as none.
		if e := aw.GetEarlyFirings(); e != nil && e.GetDefault() == nil {
			c, err := t.add(e)
			if err != nil {
				return 0, err
			}
			n.early = c
		}
		if l := aw.GetLateFirings(); l != nil {
			c, err := t.add(l)
			if err != nil {
				return 0, err
			}
			n.late = c
		}
	}
	t.nodes[i] = n
	return i, nil
}

// String renders the tree, for messages.
func (t *Trigger) String() string {
	var b strings.Builder
	t.format(&b, 0)
	return b.String()
}

func (t *Trigger) format(b *strings.Builder, i int) {
	n := &t.nodes[i]
	b.WriteString(n.kind.String())
	switch n.kind {
	case KindCount:
		fmt.Fprintf(b, "(%d)", n.count)
		return
	case KindProcTime:
		fmt.Fprintf(b, "%v", n.transforms)
		return
	case KindEndOfWindow:
		b.WriteString("(")
		if n.early >= 0 {
			b.WriteString("early=")
			t.format(b, n.early)
		}
		if n.late >= 0 {
			b.WriteString(" late=")
			t.format(b, n.late)
		}
		b.WriteString(")")
		return
	}
	if len(n.subs) > 0 {
		b.WriteString("(")
		for j, s := range n.subs {
			if j > 0 {
				b.WriteString(", ")
			}
			t.format(b, s)
		}
		b.WriteString(")")
	}
}

// HasProcessingTime reports whether any node acts on processing time.
func (t *Trigger) HasProcessingTime() bool {
	for _, n := range t.nodes {
		if n.kind == KindProcTime || n.kind == KindSyncProcTime {
			return true
		}
	}
	return false
}
