package queries

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
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
// last pane, which holds all of the seller's auctions. A pane's index
// would say which that is, but the Go SDK gives a combine's outputs no
// pane (its ExtractOutput drops it: every pane reads as index 0, on weir
// and on Prism), so the combine counts the auctions it has seen
// (SellerPrice.Bids, not in Beam's), and normaliseQ6 keeps each seller's
// result with the most.
func init() {
	beam.RegisterType(reflect.TypeOf(q6Mean{}))
	register.Function2x0(q6Rekey)
	register.Function3x0(q6Select)
	register.Combiner3[q6Recent, model.Bid, q6Mean](&q6MeanFn{})
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

func q6Select(seller int64, m q6Mean, emit func(model.SellerPrice)) {
	emit(model.SellerPrice{Seller: seller, Price: m.Price, Bids: m.Bids})
}

// q6Recent is a seller's latest winning bids, by time then price,
// oldest first (only time and price decide the mean), and how many it
// has seen in all.
type q6Recent struct {
	Times, Prices []int64
	Seen          int64
}

// q6Mean is the mean price of a seller's last bids and how many bids the
// seller had.
type q6Mean struct {
	Price, Bids int64
}

// q6MeanFn is Query6.MovingMeanSellingPrice: the rounded mean price of
// the last ten bids.
type q6MeanFn struct{}

func (*q6MeanFn) CreateAccumulator() q6Recent { return q6Recent{} }

func (*q6MeanFn) AddInput(acc q6Recent, b model.Bid) q6Recent {
	acc.Times = append(acc.Times, b.DateTime)
	acc.Prices = append(acc.Prices, b.Price)
	acc.Seen++
	return acc.keepLast()
}

func (*q6MeanFn) MergeAccumulators(a, b q6Recent) q6Recent {
	a.Times = append(a.Times, b.Times...)
	a.Prices = append(a.Prices, b.Prices...)
	a.Seen += b.Seen
	return a.keepLast()
}

func (*q6MeanFn) ExtractOutput(acc q6Recent) q6Mean {
	if len(acc.Prices) == 0 {
		return q6Mean{}
	}
	sum := int64(0)
	for _, p := range acc.Prices {
		sum += p
	}
	return q6Mean{Price: javaRound(float64(sum) / float64(len(acc.Prices))), Bids: acc.Seen}
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

// normaliseQ6 keeps each seller's result with the most auctions.
func normaliseQ6(results []string) []string {
	last := map[int64]model.SellerPrice{}
	for _, r := range results {
		var sp model.SellerPrice
		if _, err := fmt.Sscanf(r, "SellerPrice{%d %d bids:%d}", &sp.Seller, &sp.Price, &sp.Bids); err != nil {
			return append([]string{"unparsable: " + r}, results...)
		}
		if b, ok := last[sp.Seller]; !ok || sp.Bids > b.Bids {
			last[sp.Seller] = sp
		}
	}
	out := make([]string, 0, len(last))
	for _, sp := range last {
		out = append(out, sp.String())
	}
	return out
}
