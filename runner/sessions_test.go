package runner

import (
	"context"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
)

// TestSessionsWithEarlyFirings runs a TestStream into ten-second sessions
// that fire early every two elements, accumulating. Two sessions each fire
// early, then an element between them merges them into one session, whose
// panes count the values of both.
func TestSessionsWithEarlyFirings(t *testing.T) {
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	c := teststream.NewConfig()
	c.AddElements(1000, "a")
	c.AddElements(2000, "a")  // [1s, 12s) fires early: a=2
	c.AddElements(18000, "a") //
	c.AddElements(19000, "a") // [18s, 29s) fires early: a=2
	c.AddElements(11000, "a") // bridges them into [1s, 29s)
	c.AddElements(12000, "a") // fires early: a=6
	c.AddElements(15000, "a")
	c.AdvanceWatermarkToInfinity() // on time: a=7
	win := beam.WindowInto(s, window.NewSessions(10*time.Second), teststream.Create(s, c),
		beam.Trigger(trigger.AfterEndOfWindow().EarlyFiring(trigger.AfterCount(2))), beam.PanesAccumulate())
	counts := stats.Count(s, win)
	passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), beam.ParDo(s, formatCount, counts)),
		"a=2", "a=2", "a=6", "a=7")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := Execute(ctx, p); err != nil {
		t.Fatal(err)
	}
}
