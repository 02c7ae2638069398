package queries

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Query 1, currency conversion: every bid, its price from dollars to
// euros (Query1). In CQL:
//
//	SELECT Istream(auction, DOLTOEUR(price), bidder, datetime)
//	FROM bid [ROWS UNBOUNDED];
//
// Beam features: ParDo.
func init() {
	register.Function2x0(q1ToEuros)
	add(Query{Name: "1", Title: "Currency conversion", Deterministic: true, Build: buildQ1})
}

func buildQ1(s beam.Scope, _ config.Config, events beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("Query1.ToEuros"), q1ToEuros, JustBids(s, events))
}

func q1ToEuros(b model.Bid, emit func(model.Bid)) {
	b.Price = b.Price * 89 / 100
	emit(b)
}
