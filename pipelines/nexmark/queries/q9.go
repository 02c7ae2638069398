package queries

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
)

// Query 9, winning bids: each closed auction with its winning bid (Query9,
// not in the original Nexmark; WinningBids on its own). Beam features:
// those of WinningBids.
func init() {
	add(Query{Name: "9", Title: "Winning bids", Deterministic: true, Build: func(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
		return WinningBids(s.Scope("Query9"), cfg, events)
	}})
}
