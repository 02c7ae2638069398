package queries

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Query 4, average price for a category: the mean winning price of the
// auctions of each category that closed in each sliding window of
// WindowSizeSec every WindowPeriodSec (Query4). In CQL:
//
//	SELECT Istream(AVG(Q.final))
//	FROM Category C, (SELECT Rstream(MAX(B.price) AS final, A.category)
//	                  FROM Auction A [ROWS UNBOUNDED], Bid B [ROWS UNBOUNDED]
//	                  WHERE A.id=B.auction AND B.datetime < A.expires AND A.expires < CURRENT_TIME
//	                  GROUP BY A.id, A.category) Q
//	WHERE Q.category = C.id GROUP BY C.id;
//
// Beam features: WinningBids' state and timers, sliding windows, a
// combine per key (Mean), the pane of each result. Beam's Mean has a hot
// key fanout of Fanout; the Go SDK's combines have no fanout. Beam marks
// the on-time pane last (IsLast), since its lateness is zero; the Go SDK
// gives a combine's outputs no pane (its ExtractOutput drops it), so
// IsLast is false here on every runner.
func init() {
	register.Function2x0(q4Rekey)
	register.Function4x0(q4Project)
	register.Emitter2[int64, int64]()
	register.Emitter1[model.CategoryPrice]()
	add(Query{Name: "4", Title: "Average price for a category", Deterministic: true, Build: buildQ4})
}

func buildQ4(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
	s = s.Scope("Query4")
	prices := beam.ParDo(s.Scope("Rekey"), q4Rekey, WinningBids(s, cfg, events))
	windowed := beam.WindowInto(s, window.NewSlidingWindows(seconds(cfg.WindowPeriodSec), seconds(cfg.WindowSizeSec)), prices)
	return beam.ParDo(s.Scope("Project"), q4Project, stats.MeanPerKey(s, windowed))
}

func q4Rekey(ab model.AuctionBid, emit func(int64, int64)) {
	emit(ab.Auction.Category, ab.Bid.Price)
}

func q4Project(pane typex.PaneInfo, category int64, mean float64, emit func(model.CategoryPrice)) {
	emit(model.CategoryPrice{Category: category, Price: javaRound(mean), IsLast: pane.IsLast})
}
