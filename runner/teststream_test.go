package runner

import (
	"context"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
)

// TestTestStreamEventTimes runs a TestStream into fixed windows: the sums
// per window show that each element kept its event time, and the job ends
// after the last event.
func TestTestStreamEventTimes(t *testing.T) {
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	c := teststream.NewConfig()
	c.AddElements(1000, int64(1), int64(2))
	c.AdvanceWatermark(11000)
	c.AddElements(12000, int64(4))
	c.AdvanceWatermark(13000)
	c.AddElements(25000, int64(8)) // the watermark goes to +inf after the last event
	sums := stats.Sum(s, beam.WindowInto(s, window.NewFixedWindows(10*time.Second), teststream.Create(s, c)))
	passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), sums), int64(3), int64(4), int64(8))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := Execute(ctx, p); err != nil {
		t.Fatal(err)
	}
}
