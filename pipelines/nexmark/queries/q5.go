package queries

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Query 5, hot items: the auctions with the most bids in each sliding
// window of WindowSizeSec every WindowPeriodSec, with their count
// (Query5). In CQL:
//
//	SELECT Rstream(auction)
//	FROM (SELECT B1.auction, count(*) AS num
//	      FROM Bid [RANGE 60 MINUTE SLIDE 1 MINUTE] B1 GROUP BY B1.auction)
//	WHERE num >= ALL (SELECT count(*) FROM Bid [RANGE 60 MINUTE SLIDE 1 MINUTE] B2
//	                  GROUP BY B2.auction);
//
// Beam features: sliding windows, a count per element, a global combine
// per window (Beam's has a fanout of Fanout; the Go SDK's have none).
func init() {
	register.Function2x0(q5BidAuction)
	register.Function3x0(q5ToCount)
	register.Function2x0(q5Select)
	register.Combiner3[q5Top, model.AuctionCount, q5Top](&q5TopFn{})
	register.Emitter1[int64]()
	register.Emitter1[model.AuctionCount]()
	add(Query{Name: "5", Title: "Hot items", Deterministic: true, Build: buildQ5})
}

func buildQ5(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
	s = s.Scope("Query5")
	bids := beam.WindowInto(s, window.NewSlidingWindows(seconds(cfg.WindowPeriodSec), seconds(cfg.WindowSizeSec)), JustBids(s, events))
	auctions := beam.ParDo(s.Scope("BidToAuction"), q5BidAuction, bids)
	counts := beam.ParDo(s.Scope("ToCount"), q5ToCount, stats.Count(s, auctions))
	top := beam.Combine(s.Scope("Top"), &q5TopFn{}, counts)
	return beam.ParDo(s.Scope("Select"), q5Select, top)
}

func q5BidAuction(b model.Bid, emit func(int64)) { emit(b.Auction) }

func q5ToCount(auction int64, n int, emit func(model.AuctionCount)) {
	emit(model.AuctionCount{Auction: auction, Num: int64(n)})
}

// q5Top is the auctions that share the highest count so far.
type q5Top struct {
	Num      int64
	Auctions []int64
}

// q5TopFn keeps every auction with the top count (Query5.TopCombineFn).
type q5TopFn struct{}

func (*q5TopFn) CreateAccumulator() q5Top { return q5Top{} }

func (*q5TopFn) AddInput(acc q5Top, c model.AuctionCount) q5Top {
	switch {
	case c.Num > acc.Num:
		return q5Top{Num: c.Num, Auctions: []int64{c.Auction}}
	case c.Num == acc.Num:
		acc.Auctions = append(acc.Auctions, c.Auction)
	}
	return acc
}

func (*q5TopFn) MergeAccumulators(a, b q5Top) q5Top {
	switch {
	case b.Num > a.Num:
		return b
	case b.Num == a.Num:
		a.Auctions = append(a.Auctions, b.Auctions...)
	}
	return a
}

func q5Select(top q5Top, emit func(model.AuctionCount)) {
	for _, a := range top.Auctions {
		emit(model.AuctionCount{Auction: a, Num: top.Num})
	}
}
