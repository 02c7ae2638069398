package triggers

import (
	"encoding/binary"
	"errors"
	"fmt"

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
	pn := Pane{First: !p.fired, Last: final, Timing: p.Timing(maxTS, in, out)}
	if p.fired {
		pn.Index = p.last.Index + 1
		pn.OnTimeIndex = p.last.OnTimeIndex + 1
	}
	if pn.Timing == Early {
		pn.OnTimeIndex = -1
	}
	p.fired, p.last = true, pn
	return pn
}

// Timing is the timing the next pane would have, as Next decides it,
// without recording a pane.
func (p *PaneTracker) Timing(maxTS, in, out mtime.Time) Timing {
	onlyEarly := !p.fired || p.last.Timing == Early
	switch {
	case maxTS < out || !onlyEarly:
		return Late
	case in <= maxTS:
		return Early
	}
	return OnTime
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

// DecodePane reads Beam's encoding of a PaneInfo, as AppendPane writes it.
func DecodePane(b []byte) (Pane, error) {
	if len(b) == 0 {
		return Pane{}, errPaneShort
	}
	h := b[0]
	p := Pane{First: h&1 != 0, Last: h&2 != 0, Timing: Timing(h>>2) & 3}
	rest := b[1:]
	next := func() (int64, error) {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			return 0, errPaneShort
		}
		rest = rest[n:]
		return int64(v), nil
	}
	var err error
	switch h >> 4 {
	case 0:
	case 1:
		if p.Index, err = next(); err != nil {
			return Pane{}, err
		}
		p.OnTimeIndex = p.Index
		if p.Timing == Early {
			p.OnTimeIndex = -1
		}
	case 2:
		if p.Index, err = next(); err != nil {
			return Pane{}, err
		}
		if p.OnTimeIndex, err = next(); err != nil {
			return Pane{}, err
		}
	default:
		return Pane{}, fmt.Errorf("triggers: pane encoding %d is not Beam's", h>>4)
	}
	return p, nil
}

var errPaneShort = errors.New("triggers: pane info truncated")

// AppendBinary appends the tracker's encoding, so a store can keep it.
func (p *PaneTracker) AppendBinary(b []byte) ([]byte, error) {
	if !p.fired {
		return append(b, 0), nil
	}
	return AppendPane(append(b, 1), p.last), nil
}

// UnmarshalBinary decodes a tracker written by AppendBinary.
func (p *PaneTracker) UnmarshalBinary(b []byte) error {
	if len(b) == 0 || b[0] > 1 {
		return errors.New("triggers: malformed pane tracker")
	}
	if b[0] == 0 {
		if len(b) != 1 {
			return errors.New("triggers: malformed pane tracker")
		}
		*p = PaneTracker{}
		return nil
	}
	last, err := DecodePane(b[1:])
	if err != nil {
		return err
	}
	*p = PaneTracker{fired: true, last: last}
	return nil
}

// MergePanes numbers the panes of a window made by merging windows whose
// trackers are ps: it continues from the merged window that fired the most
// panes, so pane indexes never repeat within the merged window's output.
func MergePanes(ps []PaneTracker) PaneTracker {
	var out PaneTracker
	for _, p := range ps {
		if p.fired && (!out.fired || p.last.Index > out.last.Index) {
			out = p
		}
	}
	return out
}
