package queries

import (
	"context"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Results counts what reaches CountResults, as Beam's COUNT_ONLY sink does.
var Results = beam.NewCounter("nexmark", "results")

// CountResults adds a sink that counts col's elements in Results and
// drops them.
func CountResults(s beam.Scope, col beam.PCollection) {
	s = s.Scope("CountResults")
	if fn, ok := counters[col.Type().Type()]; ok {
		beam.ParDo0(s, fn, col)
		return
	}
	beam.ParDo0(s, &countAny{}, col) // by reflection: slower, any type
}

// counters count the queries' result types, one function each (the SDK
// resolves functions by name, which generic instances do not have), each
// registered so that the SDK calls it without reflection.
var counters = map[reflect.Type]any{}

func init() {
	counters[reflect.TypeOf(model.Event{})] = countEvent
	register.Function2x0(countEvent)
	counters[reflect.TypeOf(model.Bid{})] = countBid
	register.Function2x0(countBid)
	counters[reflect.TypeOf(model.AuctionPrice{})] = countAuctionPrice
	register.Function2x0(countAuctionPrice)
	counters[reflect.TypeOf(model.NameCityStateID{})] = countNameCityStateID
	register.Function2x0(countNameCityStateID)
	counters[reflect.TypeOf(model.CategoryPrice{})] = countCategoryPrice
	register.Function2x0(countCategoryPrice)
	counters[reflect.TypeOf(model.AuctionCount{})] = countAuctionCount
	register.Function2x0(countAuctionCount)
	counters[reflect.TypeOf(model.SellerPrice{})] = countSellerPrice
	register.Function2x0(countSellerPrice)
	counters[reflect.TypeOf(model.IDNameReserve{})] = countIDNameReserve
	register.Function2x0(countIDNameReserve)
	counters[reflect.TypeOf(model.AuctionBid{})] = countAuctionBid
	register.Function2x0(countAuctionBid)
	counters[reflect.TypeOf(model.BidsPerSession{})] = countBidsPerSession
	register.Function2x0(countBidsPerSession)
	counters[reflect.TypeOf(model.Done{})] = countDone
	register.Function2x0(countDone)
}

func countEvent(ctx context.Context, _ model.Event)                     { Results.Inc(ctx, 1) }
func countBid(ctx context.Context, _ model.Bid)                         { Results.Inc(ctx, 1) }
func countAuctionPrice(ctx context.Context, _ model.AuctionPrice)       { Results.Inc(ctx, 1) }
func countNameCityStateID(ctx context.Context, _ model.NameCityStateID) { Results.Inc(ctx, 1) }
func countCategoryPrice(ctx context.Context, _ model.CategoryPrice)     { Results.Inc(ctx, 1) }
func countAuctionCount(ctx context.Context, _ model.AuctionCount)       { Results.Inc(ctx, 1) }
func countSellerPrice(ctx context.Context, _ model.SellerPrice)         { Results.Inc(ctx, 1) }
func countIDNameReserve(ctx context.Context, _ model.IDNameReserve)     { Results.Inc(ctx, 1) }
func countAuctionBid(ctx context.Context, _ model.AuctionBid)           { Results.Inc(ctx, 1) }
func countBidsPerSession(ctx context.Context, _ model.BidsPerSession)   { Results.Inc(ctx, 1) }
func countDone(ctx context.Context, _ model.Done)                       { Results.Inc(ctx, 1) }

type countAny struct{}

func (*countAny) ProcessElement(ctx context.Context, _ beam.T) { Results.Inc(ctx, 1) }
