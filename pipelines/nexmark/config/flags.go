package config

import (
	"flag"
	"fmt"
)

// AddFlags binds c's fields to flags of fs named as Beam's Nexmark options
// are, in snake case (--num_events, --num_event_generators, ...), with c's
// current values as defaults.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.Int64Var(&c.NumEvents, "num_events", c.NumEvents, "events to generate; 0 is unbounded")
	fs.IntVar(&c.NumEventGenerators, "num_event_generators", c.NumEventGenerators, "generators, each with its own timeline and ids")
	fs.Func("rate_shape", fmt.Sprintf("shape of the event rate: %s or %s (default %s)", Square, Sine, c.RateShape), func(s string) error {
		c.RateShape = RateShape(s)
		return nil
	})
	fs.IntVar(&c.FirstEventRate, "first_event_rate", c.FirstEventRate, "initial overall event rate")
	fs.IntVar(&c.NextEventRate, "next_event_rate", c.NextEventRate, "next overall event rate")
	fs.Func("rate_unit", fmt.Sprintf("unit of the rates: %s or %s (default %s)", PerSecond, PerMinute, c.RateUnit), func(s string) error {
		c.RateUnit = RateUnit(s)
		return nil
	})
	fs.IntVar(&c.RatePeriodSec, "rate_period_sec", c.RatePeriodSec, "period of the rate shape, seconds")
	fs.BoolVar(&c.IsRateLimited, "is_rate_limited", c.IsRateLimited, "streaming: emit events no faster than their timeline, holding the odd one back")
	fs.Int64Var(&c.BaseTimeMillis, "base_time_millis", c.BaseTimeMillis, "event time of the first events, ms since the epoch")
	fs.IntVar(&c.AvgPersonByteSize, "avg_person_byte_size", c.AvgPersonByteSize, "average size of a person event")
	fs.IntVar(&c.AvgAuctionByteSize, "avg_auction_byte_size", c.AvgAuctionByteSize, "average size of an auction event")
	fs.IntVar(&c.AvgBidByteSize, "avg_bid_byte_size", c.AvgBidByteSize, "average size of a bid event")
	fs.IntVar(&c.HotAuctionRatio, "hot_auction_ratio", c.HotAuctionRatio, "bids on hot auctions against others")
	fs.IntVar(&c.HotSellersRatio, "hot_sellers_ratio", c.HotSellersRatio, "auctions of hot sellers against others")
	fs.IntVar(&c.HotBiddersRatio, "hot_bidders_ratio", c.HotBiddersRatio, "bids of hot bidders against others")
	fs.Int64Var(&c.WindowSizeSec, "window_size_sec", c.WindowSizeSec, "window size of queries 3, 5, 7, 8, 11, 12")
	fs.Int64Var(&c.WindowPeriodSec, "window_period_sec", c.WindowPeriodSec, "sliding period of queries 4 and 5")
	fs.Int64Var(&c.WatermarkHoldbackSec, "watermark_holdback_sec", c.WatermarkHoldbackSec, "the generator's watermark lags its events by this")
	fs.IntVar(&c.NumInFlightAuctions, "num_in_flight_auctions", c.NumInFlightAuctions, "auctions open at once, per generator, on average")
	fs.IntVar(&c.NumActivePeople, "num_active_people", c.NumActivePeople, "people who sell and bid")
	fs.IntVar(&c.AuctionSkip, "auction_skip", c.AuctionSkip, "query 2 keeps every auction_skip'th auction")
	fs.IntVar(&c.MaxAuctionsWaitingTime, "max_auctions_waiting_time", c.MaxAuctionsWaitingTime, "query 3's state expiry, seconds")
	fs.Int64Var(&c.OccasionalDelaySec, "occasional_delay_sec", c.OccasionalDelaySec, "rate-limited: the longest hold-back of an event")
	fs.Float64Var(&c.ProbDelayedEvent, "prob_delayed_event", c.ProbDelayedEvent, "rate-limited: the share of events held back")
	fs.IntVar(&c.MaxLogEvents, "max_log_events", c.MaxLogEvents, "queries 10 and 11: events per pane")
	fs.Int64Var(&c.OutOfOrderGroupSize, "out_of_order_group_size", c.OutOfOrderGroupSize, "shuffle each generator's events in groups of this many")
	fs.IntVar(&c.NumLogShards, "num_log_shards", c.NumLogShards, "query 10's shards per window")
	fs.IntVar(&c.SideInputRowCount, "side_input_row_count", c.SideInputRowCount, "rows of the bounded side input join's side input")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "0 makes Beam Java's events; others another stream of the same shape")
	fs.IntVar(&c.SourceSplits, "source_splits", c.SourceSplits, "restrictions the generator starts with (0: one per generator)")
}
