package triggers

import (
	"encoding/binary"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// Timing says when a pane fired relative to the watermark.
type Timing uint8

// Pane timings, numbered as Beam encodes them.
const (
	Early Timing = iota
	OnTime
	Late
	Unknown
)

func (t Timing) String() string {
	return [...]string{"EARLY", "ON_TIME", "LATE", "UNKNOWN"}[t&3]
}

// Pane is Beam's PaneInfo: where a pane sits among its window's panes.
type Pane struct {
	First, Last bool
	Timing      Timing
	Index       int64 // 0 for the first pane of the window
	OnTimeIndex int64 // index among non-early panes; -1 for early panes
}

// PaneTracker numbers a window's panes. Its zero value is a window that has
// not fired.
type PaneTracker struct {
	fired bool
	last  Pane
}

// Next describes the next pane of a window whose last instant is maxTS,
// and records it. in is the input watermark; out the watermark the
// operator has passed downstream so far. Final marks the window's last pane.
// The rule is Beam's: a pane is late once the output watermark has passed
// the window or an on-time or late pane has fired; otherwise early while
// the input watermark has not passed the window; otherwise on time.
func (p *PaneTracker) Next(maxTS, in, out mtime.Time, final bool) Pane {
	pn := Pane{First: !p.fired, Last: final}
	if p.fired {
		pn.Index = p.last.Index + 1
		pn.OnTimeIndex = p.last.OnTimeIndex + 1
	}
	onlyEarly := !p.fired || p.last.Timing == Early
	switch {
	case maxTS < out || !onlyEarly:
		pn.Timing = Late
	case in <= maxTS:
		pn.Timing, pn.OnTimeIndex = Early, -1
	default:
		pn.Timing = OnTime
	}
	p.fired, p.last = true, pn
	return pn
}

// AppendPane appends Beam's encoding of a PaneInfo: one byte (first, last,
// timing, and how many indexes follow), then the indexes as varints.
func AppendPane(b []byte, p Pane) []byte {
	h := byte(p.Timing&3) << 2
	if p.First {
		h |= 1
	}
	if p.Last {
		h |= 2
	}
	switch {
	case p.Index == 0 && p.OnTimeIndex == 0 || p.Timing == Unknown:
		return append(b, h)
	case p.Index == p.OnTimeIndex || p.Timing == Early:
		return binary.AppendUvarint(append(b, h|1<<4), uint64(p.Index))
	default:
		b = binary.AppendUvarint(append(b, h|2<<4), uint64(p.Index))
		return binary.AppendUvarint(b, uint64(p.OnTimeIndex))
	}
}
