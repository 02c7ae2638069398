package watermarkmgr

import (
	"sort"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// SplitState is what an alignment group knows of one split.
type SplitState struct {
	Watermark mtime.Time
	Idle      bool
	Paused    bool
	Ended     bool
	// Quiet is how long the split has delivered nothing while not paused:
	// its activity clock (Splits fills it in).
	Quiet time.Duration
	// Backlog: the split is known to have records it has not read (a
	// Kafka partition whose last fetch reported a high watermark past its
	// next offset). The reader fills it in; false when unknown.
	Backlog bool
}

// AlignConfig configures an alignment group.
type AlignConfig struct {
	// MaxDrift: a split whose watermark is past the group minimum plus
	// this is paused until the minimum catches up.
	MaxDrift time.Duration
	// Interval is how often the group samples its splits and announces
	// its bound; default one second.
	Interval time.Duration
	// Buffer is how many of a split's samples the pause decision looks
	// back over, using the oldest (FLINK-37399): a split may run about
	// Buffer intervals past the bound before it is paused, so the round
	// trip of the announcement does not cap catch-up at one drift per
	// interval. 0 decides on the latest watermark alone.
	Buffer int
	// DryAfter: a running split with no known backlog that has delivered
	// nothing for this long (its Quiet) is dry. It has read everything
	// there is, so pausing the others cannot speed it up: it stops holding
	// the bound (see Group), though it keeps its watermark. 0 means the
	// default, Buffer+3 intervals; negative, never dry.
	DryAfter time.Duration
}

// Announcement is a group's bound at one sample.
type Announcement struct {
	Seq uint64
	// Min is the minimum watermark over the group's splits that are
	// neither idle nor ended; +inf when there are none.
	Min mtime.Time
	// Max is the largest such watermark: Max - Min is the spread between
	// the fastest and slowest split.
	Max mtime.Time
	// Bound is the minimum over the splits that hold the bound (neither
	// idle, ended nor dry) plus the maximum drift, saturating at +inf; it
	// is Min plus the drift unless the slowest split is dry.
	Bound mtime.Time
	// Paused counts the splits paused by this announcement.
	Paused int
	// Dry counts the splits that are dry (see AlignConfig.DryAfter).
	Dry int
}

// Spread returns the distance between the fastest and slowest split: 0
// when fewer than two splits count, or while the slowest has no watermark
// yet (-inf).
func (a Announcement) Spread() time.Duration {
	if a.Min >= a.Max || a.Min == mtime.MinTimestamp || a.Max == mtime.MaxTimestamp {
		return 0
	}
	return time.Duration(a.Max-a.Min) * time.Millisecond
}

// member is one reader in a group.
type member struct {
	splits []alignedSplit
}

type alignedSplit struct {
	state   SplitState
	samples []mtime.Time // ring of the last Buffer samples, oldest at next
	next    int
	filled  int
}

// Group is a watermark alignment group: readers of one or more sources
// that may drift apart in event time by at most MaxDrift. Each reader
// reports its splits' states (Report) and reads the decision per split
// (Paused), then pauses or resumes single splits, never the whole reader.
// Every Interval the group samples the splits and announces min +
// MaxDrift (Tick): the samples feed the Buffer rule, the announcement the
// metrics.
//
// The rules, each against a way Flink's alignment hung jobs:
//
//   - Idle and ended splits are left out of the minimum; with none left it
//     is +inf and the bound saturates at +inf (FLINK-31632), so nothing is
//     paused. A reader with no splits, or whose splits have all ended,
//     holds nothing back (FLINK-32414, FLINK-35157, FLINK-37670).
//   - Paused splits stay in the minimum: a paused split is never idle
//     (Splits stops its activity clock), and the slowest split is never
//     paused, since its watermark is the minimum and the drift is not
//     negative. So some split always runs, and as it advances the bound
//     rises until the paused splits resume (FLINK-32496, FLINK-40093).
//   - Idle and ended splits are never paused: pausing an idle split would
//     keep it from coming back.
//   - A dry split (running, no known backlog, quiet for DryAfter) does not
//     hold the bound and is never paused, but it stays in Min: only the
//     pause decision forgets it, its watermark still holds the reader's
//     output (Splits), so nothing it reads later is late. Without this, a
//     backfill without an idle timeout stalls: the slowest split reads the
//     end of its log while holding the minimum, the others wait paused at
//     min + MaxDrift, and nothing moves again. Pausing others only helps
//     a split that has records to read. Zero lag alone is not enough: in a
//     live stream every split is at its log end between two writes, so a
//     split is dry only after DryAfter (several intervals) of quiet; until
//     then a slow producer's split still holds the others back. A record
//     makes it hold the bound again at once, and splits past the bound
//     pause again.
//   - The bound is taken over the splits as last reported, at every
//     decision (see Paused): never stale, so the slowest split is never
//     paused and catch-up is not capped by the announcement interval.
//   - A running split is paused when the oldest of its last Buffer samples
//     (taken at announcements) is past the bound; with Buffer 0, when its
//     watermark as last reported is. A paused split resumes once its
//     watermark is at or under the bound. The gap between the two is
//     hysteresis: a resumed split runs at least until it passes the bound
//     again.
//
// Group does no I/O and reads no clock. It is not safe for concurrent use:
// the caller that shares one between readers locks around it.
type Group struct {
	cfg     AlignConfig
	members map[string]*member
	next    time.Time // when the next sample is due; zero: at the first Tick
	last    Announcement
}

// NewGroup returns an empty group. Its first Tick samples and announces.
func NewGroup(cfg AlignConfig) *Group {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	cfg.Buffer = max(cfg.Buffer, 0)
	if cfg.DryAfter == 0 {
		cfg.DryAfter = time.Duration(cfg.Buffer+3) * cfg.Interval
	}
	return &Group{cfg: cfg, members: map[string]*member{},
		last: Announcement{Min: mtime.MaxTimestamp, Max: mtime.MaxTimestamp, Bound: mtime.MaxTimestamp}}
}

// Report records the current states of a reader's splits, in its split
// order, adding the reader if new. A reader's number of splits may change;
// splits beyond the old number start with empty samples.
func (g *Group) Report(reader string, states []SplitState) {
	m := g.members[reader]
	if m == nil {
		m = &member{}
		g.members[reader] = m
	}
	if len(m.splits) > len(states) {
		m.splits = m.splits[:len(states)]
	}
	for len(m.splits) < len(states) {
		m.splits = append(m.splits, alignedSplit{samples: make([]mtime.Time, max(g.cfg.Buffer, 1))})
	}
	for i, st := range states {
		m.splits[i].state = st
	}
}

// Leave removes a reader: its splits no longer count.
func (g *Group) Leave(reader string) { delete(g.members, reader) }

// Tick samples every split and announces a new bound if an interval has
// passed since the last announcement. It reports whether it announced.
func (g *Group) Tick(now time.Time) (Announcement, bool) {
	if !g.next.IsZero() && now.Before(g.next) {
		return g.last, false
	}
	g.next = now.Add(g.cfg.Interval)
	g.announce()
	return g.last, true
}

// announce samples every split and records the bound.
func (g *Group) announce() {
	for _, m := range g.members {
		for i := range m.splits {
			m.splits[i].sample()
		}
	}
	low, high, _, bound := g.bound()
	paused, dry := 0, 0
	for _, m := range g.members {
		for i := range m.splits {
			x := &m.splits[i]
			if g.dry(x) {
				dry++
			}
			if g.decide(x, bound) {
				paused++
			}
		}
	}
	g.last = Announcement{Seq: g.last.Seq + 1, Min: low, Max: high, Bound: bound, Paused: paused, Dry: dry}
}

// bound returns the minimum and maximum watermark over splits that are
// neither idle nor ended, as last reported (+inf each when there are
// none), the minimum over those that are not dry either (hold; +inf when
// there are none), and the bound: hold plus the maximum drift.
func (g *Group) bound() (low, high, hold, bound mtime.Time) {
	low, high, hold = mtime.MaxTimestamp, mtime.MinTimestamp, mtime.MaxTimestamp
	counted := 0
	for _, m := range g.members {
		for i := range m.splits {
			x := &m.splits[i]
			if x.state.Idle || x.state.Ended {
				continue
			}
			counted++
			low = min(low, x.state.Watermark)
			high = max(high, x.state.Watermark)
			if !g.dry(x) {
				hold = min(hold, x.state.Watermark)
			}
		}
	}
	if counted == 0 {
		high = mtime.MaxTimestamp
	}
	return low, high, hold, addSaturating(hold, mtime.Time(g.cfg.MaxDrift.Milliseconds()))
}

// dry reports whether split x has read everything there is for DryAfter:
// running (not paused, idle or ended), no known backlog, quiet that long.
func (g *Group) dry(x *alignedSplit) bool {
	st := &x.state
	return g.cfg.DryAfter > 0 && !st.Paused && !st.Idle && !st.Ended && !st.Backlog && st.Quiet >= g.cfg.DryAfter
}

// decide returns whether split x must be paused under bound.
func (g *Group) decide(x *alignedSplit, bound mtime.Time) bool {
	switch {
	case x.state.Idle || x.state.Ended || g.dry(x):
		return false
	case x.state.Paused:
		return x.state.Watermark > bound
	case len(x.samples) == 1 || x.filled == 0:
		// Buffer 0 (or no sample yet): the latest watermark.
		return x.state.Watermark > bound
	default:
		return x.oldest() > bound
	}
}

func (x *alignedSplit) sample() {
	x.samples[x.next] = x.state.Watermark
	x.next = (x.next + 1) % len(x.samples)
	x.filled = min(x.filled+1, len(x.samples))
}

// oldest returns the oldest sample in the ring.
func (x *alignedSplit) oldest() mtime.Time {
	if x.filled < len(x.samples) {
		return x.samples[0]
	}
	return x.samples[x.next]
}

// Paused returns the group's decision for each of a reader's splits, in
// its split order: true means the split must be paused. It compares the
// splits with the bound over the splits as last reported by every reader,
// not with the last announcement: the readers share the group in one
// process, so the bound is never stale. A stale bound is what capped
// Flink's catch-up at one drift per interval (its slowest split passes
// the old minimum plus the drift, and waits for the next announcement);
// here the slowest split is never paused, and a split that passes the
// bound between announcements is paused at its reader's next report. A
// reader the group does not know gets nil.
func (g *Group) Paused(reader string) []bool {
	m := g.members[reader]
	if m == nil {
		return nil
	}
	_, _, _, bound := g.bound()
	out := make([]bool, len(m.splits))
	for i := range m.splits {
		out[i] = g.decide(&m.splits[i], bound)
	}
	return out
}

// Hold returns the bound the pause decision uses now (see Paused), over
// the splits as last reported by every reader.
func (g *Group) Hold() HoldBound {
	_, _, hold, bound := g.bound()
	return HoldBound{Min: hold, Bound: bound}
}

// HoldBound is a group's bound at one moment, for a reader that holds
// back records rather than only pausing fetches (Admits).
type HoldBound struct {
	// Min is the minimum watermark over the splits that hold the bound
	// (neither idle, ended nor dry); +inf when there are none.
	Min mtime.Time
	// Bound is Min plus the maximum drift, saturating at +inf: a split
	// whose watermark is past it is paused.
	Bound mtime.Time
}

// Admits reports whether a split whose watermark is wm may deliver its
// next record, at event time t, with out-of-orderness ooo (the split's
// watermark is its largest event time minus ooo). A pause only stops a
// split's fetches: the records it already fetched would carry it past
// the bound by up to a fetch. A reader that delivers only admitted
// records keeps every split's watermark within the bound, and the event
// times it delivers within the bound plus ooo, but for one record at a
// time of a split at the minimum (below).
//
// A record is admitted when the watermark it implies, t - ooo, is at or
// under the bound: the comparison the pause decision makes, so a split
// never goes past the bound by its own records. It is also admitted when
// the split itself holds the minimum (wm <= Min), whatever its event time:
// otherwise a slowest split whose next record lies more than the drift
// ahead of its watermark (a gap in its event times, or every split still
// at -inf at the start, where the bound is -inf plus the drift) would wait
// for a minimum only it can move, and nothing would move again. Such a
// split delivers records one at a time until it is no longer the minimum;
// with a drift of 0 that makes the splits take turns in event-time order.
func (b HoldBound) Admits(wm, t mtime.Time, ooo time.Duration) bool {
	return subSaturating(t, ooo) <= b.Bound || wm <= b.Min
}

// Last returns the last announcement.
func (g *Group) Last() Announcement { return g.last }

// Readers returns the readers in the group, sorted.
func (g *Group) Readers() []string {
	out := make([]string, 0, len(g.members))
	for r := range g.members {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}
