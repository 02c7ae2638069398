package runner

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
)

// TestLateDataEndToEnd runs a TestStream into ten-second windows with 20 s of allowed lateness and accumulating panes. A late
// element within the lateness re-fires the window with the updated count;
// one beyond it is dropped: it shows in the dropped-late metric, in a job
// message and in the dead-letter file, and in no pane.
func TestLateDataEndToEnd(t *testing.T) {
	beam.Init()
	dl := filepath.Join(t.TempDir(), "late.jsonl")
	beam.PipelineOptions.Set(DeadLetterOption, dl)
	defer beam.PipelineOptions.Set(DeadLetterOption, "")

	p, s := beam.NewPipelineWithRoot()
	c := teststream.NewConfig()
	c.AddElements(1000, "a", "a")
	c.AdvanceWatermark(11000) // on time: a=2
	c.AddElements(2000, "a")  // late, within 20 s: a=3
	c.AdvanceWatermark(40000) // [0, 10s) expires at 29.999 s
	c.AddElements(3000, "a")  // beyond the allowed lateness: dropped
	c.AddElements(41000, "b") // on time in [40s, 50s): b=1
	win := beam.WindowInto(s, window.NewFixedWindows(10*time.Second), teststream.Create(s, c),
		beam.Trigger(trigger.AfterEndOfWindow().LateFiring(trigger.Repeat(trigger.AfterCount(1)))),
		beam.AllowedLateness(20*time.Second), beam.PanesAccumulate())
	counts := stats.Count(s, win)
	passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), beam.ParDo(s, formatCount, counts)), "a=2", "a=3", "b=1")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Execute(ctx, p)
	if err != nil {
		t.Fatal(err)
	}

	q := res.Metrics().Query(func(r beam.MetricResult) bool {
		return r.Namespace() == "weir" && r.Name() == "dropped_late_elements"
	})
	var dropped int64
	var gbk string
	for _, c := range q.Counters() {
		dropped += c.Committed
		if c.Committed > 0 {
			gbk = c.Key.Step
		}
	}
	if dropped != 1 {
		t.Errorf("dropped_late_elements %+v, want 1 in all", q.Counters())
	}
	g := res.Metrics().Query(func(r beam.MetricResult) bool {
		return r.Namespace() == "weir" && r.Name() == "arrival_delay_ms_p99" && r.Transform() == gbk
	})
	if len(g.Gauges()) != 1 || g.Gauges()[0].Committed.Value <= 0 {
		t.Errorf("arrival_delay_ms_p99 of %s: %+v", gbk, g.Gauges())
	}

	// The source's arrival delays: every element the TestStream emitted,
	// by its synthetic processing time.
	d := res.Metrics().Query(func(r beam.MetricResult) bool {
		return r.Namespace() == "weir" && r.Name() == "arrival_delay_ms" && r.Transform() != gbk
	})
	if len(d.Distributions()) != 1 || d.Distributions()[0].Committed.Count != 5 {
		t.Errorf("source arrival_delay_ms: %+v, want one distribution of 5 elements", d.Distributions())
	}

	b, err := os.ReadFile(dl)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 1 {
		t.Fatalf("dead letter has %d lines, want 1:\n%s", len(lines), b)
	}
	var rec struct {
		TransformID string `json:"transform_id"`
		Transform   string
		Reason      string
		TimestampMS int64 `json:"timestamp_ms"`
		Key         string
		LatenessMS  int64 `json:"lateness_ms"`
		Window      struct {
			StartMS int64 `json:"start_ms"`
			EndMS   int64 `json:"end_ms"`
		}
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	key, _ := base64.StdEncoding.DecodeString(rec.Key)
	if rec.TransformID != gbk || rec.Reason != "late" || rec.TimestampMS != 3000 || rec.LatenessMS != 37000 ||
		rec.Window.StartMS != 0 || rec.Window.EndMS != 10000 || !strings.HasSuffix(string(key), "a") {
		t.Errorf("dead letter %s", lines[0])
	}

	jobs := inProcessServer().Jobs()
	msgs, _, _ := jobs[len(jobs)-1].Updates(0)
	found := false
	for _, m := range msgs {
		found = found || strings.Contains(m.GetMessageText(), rec.Transform+" dropped 1 late element")
	}
	if !found {
		t.Errorf("no job message about the dropped element of %s", rec.Transform)
	}
}

func formatCount(k string, n int) string { return k + "=" + strconv.Itoa(n) }

func init() {
	beam.RegisterFunction(formatCount)
}
