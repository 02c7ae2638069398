package queries

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Query 11, user sessions: the bids of each bidder's sessions, sessions
// being bids less than WindowSizeSec apart, a pane at most every
// MaxLogEvents bids (Query11, not in the original Nexmark). Beam
// features: session windows (merging), a repeated element-count trigger
// with discarding panes, allowed lateness, a count per element.
func init() {
	register.Function2x0(q11Bidder)
	register.Function3x0(q11Result)
	register.Emitter1[model.BidsPerSession]()
	add(Query{Name: "11", Title: "User sessions", Deterministic: true, Build: buildQ11})
}

func buildQ11(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
	s = s.Scope("Query11")
	bidders := beam.ParDo(s.Scope("Rekey"), q11Bidder, JustBids(s, events))
	sessions := beam.WindowInto(s, window.NewSessions(seconds(cfg.WindowSizeSec)), bidders,
		beam.Trigger(trigger.Repeat(trigger.AfterCount(int32(cfg.MaxLogEvents)))), beam.PanesDiscard(),
		beam.AllowedLateness(seconds(cfg.OccasionalDelaySec)/2))
	return beam.ParDo(s.Scope("ToResult"), q11Result, stats.Count(s, sessions))
}

func q11Bidder(b model.Bid, emit func(int64)) { emit(b.Bidder) }

func q11Result(bidder int64, n int, emit func(model.BidsPerSession)) {
	emit(model.BidsPerSession{Bidder: bidder, Bids: int64(n)})
}
