package queries

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Query 2, selection: the auction and price of the bids on every
// AuctionSkip'th auction (Query2; the CQL names five auctions, which
// Beam widens so that the query has results at any size). In CQL:
//
//	SELECT Rstream(auction, price) FROM Bid [NOW]
//	WHERE auction = 1007 OR auction = 1020 OR auction = 2001 OR ...;
//
// Beam features: ParDo (filter and projection).
func init() {
	register.DoFn2x0[model.Bid, func(model.AuctionPrice)](&q2Select{})
	register.Emitter1[model.AuctionPrice]()
	add(Query{Name: "2", Title: "Selection", Deterministic: true, Build: buildQ2})
}

func buildQ2(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("Query2.Select"), &q2Select{Skip: int64(cfg.AuctionSkip)}, JustBids(s, events))
}

type q2Select struct {
	Skip int64
}

func (fn *q2Select) ProcessElement(b model.Bid, emit func(model.AuctionPrice)) {
	if b.Auction%fn.Skip == 0 {
		emit(model.AuctionPrice{Auction: b.Auction, Price: b.Price})
	}
}
