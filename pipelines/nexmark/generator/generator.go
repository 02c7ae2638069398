package generator

import (
	"fmt"
	"math"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Generator makes the events of one configuration. It holds no state that
// changes: every method is a pure function of the configuration and its
// arguments, safe for concurrent use.
type Generator struct {
	cfg config.Config
	tl  timeline
	// total events, split over gens generators: each has perGen, the
	// last also the remainder (GeneratorConfig.split).
	total  int64
	gens   int
	perGen int64
}

// New returns the generator of c, or what is wrong with c.
func New(c config.Config) (*Generator, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("nexmark generator: %w", err)
	}
	g := &Generator{cfg: c, tl: newTimeline(&c), total: c.NumEvents, gens: c.NumEventGenerators}
	if g.total == 0 {
		// As many as Beam allows: its byte estimates must not overflow.
		avg := max(c.AvgPersonByteSize, c.AvgAuctionByteSize, c.AvgBidByteSize)
		g.total = math.MaxInt64 / (proportions * int64(avg))
	}
	g.perGen = g.total / int64(g.gens)
	return g, nil
}

// Config returns the configuration g makes events of.
func (g *Generator) Config() config.Config { return g.cfg }

// Total is the number of events of all generators.
func (g *Generator) Total() int64 { return g.total }

// Generators is how many generators share the events.
func (g *Generator) Generators() int { return g.gens }

// Count is how many events generator i makes.
func (g *Generator) Count(i int) int64 {
	if i == g.gens-1 {
		return g.total - g.perGen*int64(g.gens-1)
	}
	return g.perGen
}

// Rows is the largest Count: a row n holds the n-th event of every
// generator that has one.
func (g *Generator) Rows() int64 { return g.Count(g.gens - 1) }

// EventID is the id of generator i's n-th event. Ids are unique across
// generators (each has its own block) and decide what the event is and
// the seed of its random fields.
func (g *Generator) EventID(i int, n int64) int64 {
	return int64(i)*g.perGen + g.tl.adjusted(n)
}

// Timestamp is the event time, in ms, of generator i's n-th event: the
// time of its shuffled event number, on the timeline every generator
// shares.
func (g *Generator) Timestamp(n int64) int64 { return g.tl.timestamp(g.tl.adjusted(n)) }

// Event makes generator i's n-th event and returns it with its event
// time (which its DateTime holds too).
func (g *Generator) Event(i int, n int64) (model.Event, int64) {
	m := g.tl.adjusted(n)
	id := int64(i)*g.perGen + m
	ts := g.tl.timestamp(m)
	r := newJavaRandom(id ^ g.cfg.Seed)
	switch rem := id % proportions; {
	case rem < personProportion:
		return model.Event{NewPerson: g.person(id, &r, ts)}, ts
	case rem < personProportion+auctionProportion:
		return model.Event{NewAuction: g.auction(id, m, &r, ts)}, ts
	default:
		return model.Event{Bid: g.bid(id, &r, ts)}, ts
	}
}

// Watermark is a lower bound, in ms, of the event times of every event in
// rows n and later, less the configured holdback: what a source has
// promised once it has emitted every row before n. Shuffled groups keep
// it below their earliest member (nextEventNumberForWatermark).
func (g *Generator) Watermark(n int64) int64 {
	return g.tl.timestamp(g.tl.groupStart(n)) - g.cfg.WatermarkHoldbackSec*1000
}

// DueMillis is when row n is due in a rate-limited run, in ms after the
// run starts: where its events fall on the timeline, unshuffled (Beam's
// wallclockTimestamp).
func (g *Generator) DueMillis(n int64) int64 { return g.tl.timestamp(n) - g.tl.baseTime }

// ExpectedAuctionDurationMs is how long an auction lasts on average at the
// slowest event rate (WinningBids' expectedAuctionDurationMs): a bid for
// an auction not yet seen waits twice this for it.
func (g *Generator) ExpectedAuctionDurationMs() int64 {
	return ExpectedAuctionDurationMs(&g.cfg)
}

// ExpectedAuctionDurationMs is Generator.ExpectedAuctionDurationMs of c,
// for callers with a configuration only.
func ExpectedAuctionDurationMs(c *config.Config) int64 {
	longest := int64(0)
	for _, d := range interEventDelaysUs(c) {
		longest = max(longest, d)
	}
	us := longest * proportions / auctionProportion * int64(c.NumInFlightAuctions)
	return (us + 999) / 1000
}

// OutOfOrdernessMillis bounds how far an event's time may be behind an
// earlier event of the same generator: the span of one out-of-order group
// at the slowest rate, plus the holdback. A reader of events in each
// generator's order (a Kafka partition the producer filled) can take it
// as its out-of-orderness bound.
func (g *Generator) OutOfOrdernessMillis() int64 {
	longest := int64(0)
	for _, d := range g.tl.delaysUs {
		longest = max(longest, d)
	}
	return (g.tl.groupSize*longest+999)/1000 + g.cfg.WatermarkHoldbackSec*1000
}
