package queries

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Query 12, processing-time windows: each bidder's bids per pane of the
// global window, a pane firing WindowSizeSec of processing time after
// its first bid (Query12, not in the original Nexmark). Beam features:
// a repeated processing-time trigger with discarding panes, a count per
// element.
//
// Where the panes fall depends on the wall clock, so runs differ in
// their results; they agree on each bidder's total over all panes
// (normaliseQ12), since discarding panes count each bid once.
func init() {
	add(Query{Name: "12", Title: "Processing time windows", Build: buildQ12, Normalise: normaliseQ12})
}

func buildQ12(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
	s = s.Scope("Query12")
	bidders := beam.ParDo(s.Scope("Rekey"), q11Bidder, JustBids(s, events))
	panes := beam.WindowInto(s, window.NewGlobalWindows(), bidders,
		beam.Trigger(trigger.Repeat(trigger.AfterProcessingTime().PlusDelay(seconds(cfg.WindowSizeSec)))),
		beam.PanesDiscard(), beam.AllowedLateness(0))
	return beam.ParDo(s.Scope("ToResult"), q11Result, stats.Count(s, panes))
}

// normaliseQ12 sums each bidder's bids over their panes.
func normaliseQ12(results []string) []string {
	total := map[int64]int64{}
	for _, r := range results {
		var b model.BidsPerSession
		if _, err := fmt.Sscanf(r, "BidsPerSession{%d %d}", &b.Bidder, &b.Bids); err != nil {
			return append([]string{"unparsable: " + r}, results...)
		}
		total[b.Bidder] += b.Bids
	}
	out := make([]string, 0, len(total))
	for bidder, n := range total {
		out = append(out, model.BidsPerSession{Bidder: bidder, Bids: n}.String())
	}
	return out
}
