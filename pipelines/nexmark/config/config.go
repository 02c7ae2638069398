// Package config is the configuration of a Nexmark run: what the event
// generator and the queries read, with the defaults of Beam's Java suite
// (sdks/java/testing/nexmark, NexmarkConfiguration).
//
// A Config is plain data: it travels inside DoFns (the Go SDK serialises
// their exported fields as JSON), so every field is exported and of a
// basic type. Callers start from Default, change fields, and call Validate
// before building a pipeline.
package config

import (
	"errors"
	"fmt"
	"time"
)

// RateShape is the shape of the event rate over time.
type RateShape string

// The rate shapes of Beam's NexmarkUtils.RateShape.
const (
	Square RateShape = "square" // two rates, alternating every half period
	Sine   RateShape = "sine"   // ten steps approximating a sine wave
)

// RateUnit is what the rates count events per.
type RateUnit string

// The rate units of Beam's NexmarkUtils.RateUnit.
const (
	PerSecond RateUnit = "per_second"
	PerMinute RateUnit = "per_minute"
)

// BaseTime is the event time of the first event unless the wall clock is
// asked for: 2015-07-15T00:00:00Z, as in Beam's NexmarkUtils, so that runs
// see the same events with the same timestamps.
var BaseTime = time.Date(2015, 7, 15, 0, 0, 0, 0, time.UTC).UnixMilli()

// Config is NexmarkConfiguration's part that shapes events and queries.
// Times are milliseconds since the Unix epoch; durations are in the unit
// their name says.
type Config struct {
	// NumEvents is how many events the generator makes; 0 is as many as
	// the counters allow (practically unbounded).
	NumEvents int64
	// NumEventGenerators is how many generators split the events; each
	// has its own timeline starting at BaseTimeMillis and its own block
	// of event ids, as Beam's GeneratorConfig.split makes them.
	NumEventGenerators int

	RateShape      RateShape
	FirstEventRate int // overall, in RateUnit
	NextEventRate  int
	RateUnit       RateUnit
	RatePeriodSec  int // period of the rate shape

	// IsRateLimited (streaming only) emits each event no earlier than
	// its place on the timeline, measured from when the source starts;
	// otherwise events come as fast as they can be made.
	IsRateLimited bool
	// BaseTimeMillis is the event time of every generator's first event.
	BaseTimeMillis int64

	AvgPersonByteSize  int
	AvgAuctionByteSize int
	AvgBidByteSize     int
	HotAuctionRatio    int
	HotSellersRatio    int
	HotBiddersRatio    int

	WindowSizeSec        int64 // queries 3, 5, 7, 8, 11, 12
	WindowPeriodSec      int64 // query 5 and 4's sliding period
	WatermarkHoldbackSec int64 // the source's watermark lags by this

	NumInFlightAuctions    int
	NumActivePeople        int
	AuctionSkip            int // query 2 keeps every AuctionSkip'th auction
	MaxAuctionsWaitingTime int // query 3's state expiry, seconds
	// OccasionalDelaySec and ProbDelayedEvent (streaming, rate-limited
	// only) hold back that share of events by up to that long after
	// their turn, so that they arrive behind the watermark: late.
	OccasionalDelaySec int64
	ProbDelayedEvent   float64
	MaxLogEvents       int // queries 10 and 11: events per pane
	// OutOfOrderGroupSize shuffles every group of this many consecutive
	// events of a generator; 1 keeps them in order.
	OutOfOrderGroupSize int64
	NumLogShards        int // query 10's shards per window
	SideInputRowCount   int // rows of the bounded side input join's side input

	// Seed 0 gives Beam Java's events. Any other value is XORed into the
	// seed of every event's random numbers: another stream of the same
	// shape.
	Seed int64
	// SourceSplits is how many restrictions the generator starts with;
	// each takes a contiguous block of generators. 0 means one per
	// generator.
	SourceSplits int
}

// Default returns Beam's defaults (NexmarkConfiguration.DEFAULT), with
// 16 initial source restrictions.
func Default() Config {
	return Config{
		NumEvents:              100000,
		NumEventGenerators:     100,
		RateShape:              Sine,
		FirstEventRate:         10000,
		NextEventRate:          10000,
		RateUnit:               PerSecond,
		RatePeriodSec:          600,
		BaseTimeMillis:         BaseTime,
		AvgPersonByteSize:      200,
		AvgAuctionByteSize:     500,
		AvgBidByteSize:         100,
		HotAuctionRatio:        2,
		HotSellersRatio:        4,
		HotBiddersRatio:        4,
		WindowSizeSec:          10,
		WindowPeriodSec:        5,
		NumInFlightAuctions:    100,
		NumActivePeople:        1000,
		AuctionSkip:            123,
		MaxAuctionsWaitingTime: 600,
		OccasionalDelaySec:     3,
		ProbDelayedEvent:       0.1,
		MaxLogEvents:           100000,
		OutOfOrderGroupSize:    1,
		NumLogShards:           5,
		SideInputRowCount:      500,
		SourceSplits:           16,
	}
}

// Validate reports every field that the generator or a query cannot use.
func (c *Config) Validate() error {
	var errs []error
	positive := map[string]int64{
		"num_event_generators": int64(c.NumEventGenerators), "first_event_rate": int64(c.FirstEventRate),
		"next_event_rate": int64(c.NextEventRate), "rate_period_sec": int64(c.RatePeriodSec),
		"hot_auction_ratio": int64(c.HotAuctionRatio), "hot_sellers_ratio": int64(c.HotSellersRatio),
		"hot_bidders_ratio": int64(c.HotBiddersRatio), "window_size_sec": c.WindowSizeSec,
		"window_period_sec": c.WindowPeriodSec, "num_in_flight_auctions": int64(c.NumInFlightAuctions),
		"num_active_people": int64(c.NumActivePeople), "auction_skip": int64(c.AuctionSkip),
		"max_log_events": int64(c.MaxLogEvents), "out_of_order_group_size": c.OutOfOrderGroupSize,
		"num_log_shards": int64(c.NumLogShards), "side_input_row_count": int64(c.SideInputRowCount),
		"avg_person_byte_size": int64(c.AvgPersonByteSize), "avg_auction_byte_size": int64(c.AvgAuctionByteSize),
		"avg_bid_byte_size": int64(c.AvgBidByteSize),
	}
	for name, v := range positive {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, not %d", name, v))
		}
	}
	for name, v := range map[string]int64{
		"num_events": c.NumEvents, "watermark_holdback_sec": c.WatermarkHoldbackSec,
		"max_auctions_waiting_time": int64(c.MaxAuctionsWaitingTime),
		"occasional_delay_sec":      c.OccasionalDelaySec, "source_splits": int64(c.SourceSplits),
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, not %d", name, v))
		}
	}
	if c.ProbDelayedEvent < 0 || c.ProbDelayedEvent > 1 {
		errs = append(errs, fmt.Errorf("prob_delayed_event %v is not a probability", c.ProbDelayedEvent))
	}
	if c.NumEvents > 0 && c.NumEvents < int64(c.NumEventGenerators) {
		errs = append(errs, fmt.Errorf("num_events %d is fewer than num_event_generators %d", c.NumEvents, c.NumEventGenerators))
	}
	if c.OutOfOrderGroupSize%953 == 0 && c.OutOfOrderGroupSize > 0 {
		// The in-group shuffle multiplies by 953: a multiple of it would
		// map several events to one number.
		errs = append(errs, fmt.Errorf("out_of_order_group_size %d must not be a multiple of 953", c.OutOfOrderGroupSize))
	}
	switch c.RateShape {
	case Square, Sine:
	default:
		errs = append(errs, fmt.Errorf("rate_shape %q: want %q or %q", c.RateShape, Square, Sine))
	}
	switch c.RateUnit {
	case PerSecond, PerMinute:
	default:
		errs = append(errs, fmt.Errorf("rate_unit %q: want %q or %q", c.RateUnit, PerSecond, PerMinute))
	}
	return errors.Join(errs...)
}
