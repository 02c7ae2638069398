package queries

import (
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Query 6, average selling price by seller: after each auction a seller
// closes, the mean winning price of their last ten (Query6). In CQL:
//
//	SELECT Istream(AVG(Q.final), Q.seller)
//	FROM (SELECT Rstream(MAX(B.price) AS final, A.seller)
//	      FROM Auction A [ROWS UNBOUNDED], Bid B [ROWS UNBOUNDED]
//	      WHERE A.id=B.auction AND B.datetime < A.expires AND A.expires < CURRENT_TIME
//	      GROUP BY A.id, A.seller) [PARTITION BY A.seller ROWS 10] Q
//	GROUP BY Q.seller;
//
// Beam features: WinningBids, the global window with a repeated
// element-count trigger and accumulating panes, a combine per key.
//
// How many panes fire, and with which prices, depends on how the runner
// bundles the winning bids; every correct run agrees on each seller's
// last pane, which holds all of the seller's auctions. So the results
// carry the pane index (SellerPrice.Pane, not in Beam's), and
// normaliseQ6 keeps each seller's highest.
func init() {
	register.Function2x0(q6Rekey)
	register.Function4x0(q6Select)
	register.Combiner3[q6Recent, model.Bid, int64](&q6MeanFn{})
	register.Emitter2[int64, model.Bid]()
	register.Emitter1[model.SellerPrice]()
	add(Query{Name: "6", Title: "Average selling price by seller", Build: buildQ6, Normalise: normaliseQ6})
}

const q6Last = 10

func buildQ6(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
	s = s.Scope("Query6")
	bySeller := beam.ParDo(s.Scope("Rekey"), q6Rekey, WinningBids(s, cfg, events))
	panes := beam.WindowInto(s, window.NewGlobalWindows(), bySeller,
		beam.Trigger(trigger.Repeat(trigger.AfterCount(1))), beam.PanesAccumulate(), beam.AllowedLateness(0))
	means := beam.CombinePerKey(s, &q6MeanFn{}, panes)
	return beam.ParDo(s.Scope("Select"), q6Select, means)
}

func q6Rekey(ab model.AuctionBid, emit func(int64, model.Bid)) { emit(ab.Auction.Seller, ab.Bid) }

func q6Select(pane typex.PaneInfo, seller, price int64, emit func(model.SellerPrice)) {
	emit(model.SellerPrice{Seller: seller, Price: price, Pane: pane.Index})
}

// q6Recent is a seller's latest winning bids, by time then price,
// oldest first; only time and price decide the mean.
type q6Recent struct {
	Times, Prices []int64
}

// q6MeanFn is Query6.MovingMeanSellingPrice: the rounded mean price of
// the last ten bids.
type q6MeanFn struct{}

func (*q6MeanFn) CreateAccumulator() q6Recent { return q6Recent{} }

func (*q6MeanFn) AddInput(acc q6Recent, b model.Bid) q6Recent {
	acc.Times = append(acc.Times, b.DateTime)
	acc.Prices = append(acc.Prices, b.Price)
	return acc.keepLast()
}

func (*q6MeanFn) MergeAccumulators(a, b q6Recent) q6Recent {
	a.Times = append(a.Times, b.Times...)
	a.Prices = append(a.Prices, b.Prices...)
	return a.keepLast()
}

func (*q6MeanFn) ExtractOutput(acc q6Recent) int64 {
	if len(acc.Prices) == 0 {
		return 0
	}
	sum := int64(0)
	for _, p := range acc.Prices {
		sum += p
	}
	return javaRound(float64(sum) / float64(len(acc.Prices)))
}

func (r q6Recent) Len() int { return len(r.Times) }
func (r q6Recent) Less(i, j int) bool {
	if r.Times[i] != r.Times[j] {
		return r.Times[i] < r.Times[j]
	}
	return r.Prices[i] < r.Prices[j]
}
func (r q6Recent) Swap(i, j int) {
	r.Times[i], r.Times[j] = r.Times[j], r.Times[i]
	r.Prices[i], r.Prices[j] = r.Prices[j], r.Prices[i]
}

func (r q6Recent) keepLast() q6Recent {
	sort.Sort(r)
	if n := len(r.Times); n > q6Last {
		r.Times, r.Prices = r.Times[n-q6Last:], r.Prices[n-q6Last:]
	}
	return r
}

// normaliseQ6 keeps each seller's result from their highest pane.
func normaliseQ6(results []string) []string {
	type best struct {
		pane int64
		line string
	}
	last := map[int64]best{}
	for _, r := range results {
		var sp model.SellerPrice
		if _, err := fmt.Sscanf(r, "SellerPrice{%d %d pane:%d}", &sp.Seller, &sp.Price, &sp.Pane); err != nil {
			return append([]string{"unparsable: " + r}, results...)
		}
		if b, ok := last[sp.Seller]; !ok || sp.Pane > b.pane {
			last[sp.Seller] = best{sp.Pane, fmt.Sprintf("SellerPrice{%d %d}", sp.Seller, sp.Price)}
		}
	}
	out := make([]string, 0, len(last))
	for _, b := range last {
		out = append(out, b.line)
	}
	return out
}
