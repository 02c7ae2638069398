package queries

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Query 7, highest bid: the bids with the highest price of each fixed
// window of WindowSizeSec (Query7). In CQL:
//
//	SELECT Rstream(B.auction, B.price, B.bidder)
//	FROM Bid [RANGE 1 MINUTE SLIDE 1 MINUTE] B
//	WHERE B.price = (SELECT MAX(B1.price) FROM BID [RANGE 1 MINUTE SLIDE 1 MINUTE] B1);
//
// As in Beam, the maximum reaches the bids as a singleton side input per
// window (a combine would be cheaper; the point is the side input).
// Beam features: fixed windows, a global combine per window (Beam's Max
// has a fanout; the Go SDK's has none), a windowed singleton side input.
func init() {
	register.Function2x0(q7Price)
	register.Function3x0(q7Select)
	add(Query{Name: "7", Title: "Highest bid", Deterministic: true, Build: buildQ7})
}

func buildQ7(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
	s = s.Scope("Query7")
	bids := beam.WindowInto(s, window.NewFixedWindows(seconds(cfg.WindowSizeSec)), JustBids(s, events))
	maxPrice := stats.Max(s, beam.ParDo(s.Scope("BidToPrice"), q7Price, bids))
	return beam.ParDo(s.Scope("Select"), q7Select, bids, beam.SideInput{Input: maxPrice})
}

func q7Price(b model.Bid, emit func(int64)) { emit(b.Price) }

func q7Select(b model.Bid, maxPrice int64, emit func(model.Bid)) {
	if b.Price == maxPrice {
		emit(b)
	}
}
