package generator

import "sort"

// Occasional delays. Beam's unbounded source, when rate limited, holds
// back a share (ProbDelayedEvent) of events for a random time of up to
// OccasionalDelaySec of wall time after their turn, without holding its
// watermark for them, so that they arrive late. Beam draws both from
// ThreadLocalRandom, differently on every run; here both are a hash of the
// event's id, so every run, on any runner, holds back the same events.
//
// A held event is emitted with a later row instead of its own: the first
// row due at least its delay after its own row (DueMillis), or the last
// row of its generator. A source emits, at each row, first the held events
// released there and then the row's own events that are not held.

// DelaysOn reports whether g holds events back: only a rate-limited
// stream does, as in Beam.
func (g *Generator) DelaysOn() bool {
	return g.cfg.IsRateLimited && g.cfg.ProbDelayedEvent > 0 && g.cfg.OccasionalDelaySec > 0
}

// Release reports whether generator i's n-th event is held back, and if so
// the row it is emitted with.
func (g *Generator) Release(i int, n int64) (row int64, held bool) {
	if !g.DelaysOn() {
		return n, false
	}
	h := splitmix64(uint64(g.EventID(i, n) ^ g.cfg.Seed))
	if float64(h>>11)/(1<<53) >= g.cfg.ProbDelayedEvent {
		return n, false
	}
	delay := 1 + int64(splitmix64(h)%uint64(g.cfg.OccasionalDelaySec*1000))
	due := g.DueMillis(n) + delay
	last := g.Count(i) - 1
	// The first row after n due at or after due, or the generator's last.
	r := n + 1 + int64(sort.Search(int(last-n), func(k int) bool { return g.DueMillis(n+1+int64(k)) >= due }))
	r = min(r, last)
	return r, r > n
}

// Held is an event held back from its row until row Release.
type Held struct {
	Gen     int
	N       int64 // its own row
	Release int64
}

// HeldBefore lists generator i's events from rows before row that are
// released at row or later: what a source starting at row must emit that
// no earlier row did. Rows more than OccasionalDelaySec before row
// release before it, so only those after are looked at.
func (g *Generator) HeldBefore(i int, row int64) []Held {
	if !g.DelaysOn() || row == 0 {
		return nil
	}
	earliest := g.DueMillis(row) - g.cfg.OccasionalDelaySec*1000 - 1
	from := int64(sort.Search(int(row), func(k int) bool { return g.DueMillis(int64(k)) >= earliest }))
	var out []Held
	for n := from; n < row; n++ {
		if r, held := g.Release(i, n); held && r >= row {
			out = append(out, Held{Gen: i, N: n, Release: r})
		}
	}
	return out
}

// splitmix64 is a fast 64-bit mix (Steele, Lea and Flood's SplitMix64
// finaliser): good enough to turn ids into independent-looking draws.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
