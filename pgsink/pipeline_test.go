package pgsink_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/weir-runner/weir/internal/pgtest"
	"github.com/weir-runner/weir/pgio"
	"github.com/weir-runner/weir/runner"
)

// windowCount is a row of the pipeline test's table.
type windowCount struct {
	WindowStart int64 `beam:"window_start"`
	N           int64 `beam:"n"`
}

func one(_ []byte) (string, int) { return "all", 1 }

type countRowFn struct{}

func (*countRowFn) ProcessElement(w beam.Window, _ string, n int) windowCount {
	return windowCount{WindowStart: w.(window.IntervalWindow).Start.Milliseconds(), N: int64(n)}
}

func init() {
	register.Function1x2(one)
	register.DoFn3x1[beam.Window, string, int, windowCount](&countRowFn{})
}

// TestPipelineWithCheckpoints runs a Go pipeline on in-process weir: a
// periodic impulse (one element every 5 ms for 3 s of processing time)
// counted in 250 ms event-time windows, each count inserted as a row,
// with a checkpoint every 100 ms. Rows are committed while the job runs,
// checkpoint by checkpoint, and in the end the table holds each window
// once (its key would refuse a second) and every element is counted.
func TestPipelineWithCheckpoints(t *testing.T) {
	db := pgtest.New(t)
	db.Exec(t, `CREATE TABLE counts (window_start bigint PRIMARY KEY, n bigint NOT NULL)`)
	for k, v := range map[string]string{runner.CheckpointIntervalOption: "100ms", runner.CheckpointDirOption: t.TempDir()} {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	const every, span = 5 * time.Millisecond, 3 * time.Second
	start := time.Now().Truncate(time.Second).Add(time.Second)
	ticks := periodic.Impulse(s, start, start.Add(span), every, false)
	counts := stats.SumPerKey(s, beam.WindowInto(s, window.NewFixedWindows(250*time.Millisecond), beam.ParDo(s, one, ticks)))
	pgio.Write(s, pgio.WriteConfig{Connection: db.URL, Table: "counts"}, beam.ParDo(s, &countRowFn{}, counts))

	done := make(chan error, 1)
	go func() { _, err := runner.Execute(context.Background(), p); done <- err }()
	var during []string
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		case <-time.After(50 * time.Millisecond):
			if rows := db.Strings(t, `SELECT count(*) FROM counts`); rows[0] != "0" && during == nil {
				during = rows
			}
		}
	}
	if during == nil {
		t.Errorf("no row was visible while the job ran: commits should follow checkpoints, not only the end")
	}
	got := db.Strings(t, `SELECT count(*), sum(n)::bigint, min(window_start), max(window_start) FROM counts`)
	want := strconv.Itoa(int(span/(250*time.Millisecond))) + " " + strconv.Itoa(int(span/every)) + " " +
		strconv.FormatInt(mtime.FromTime(start).Milliseconds(), 10) + " " + strconv.FormatInt(mtime.FromTime(start.Add(span-250*time.Millisecond)).Milliseconds(), 10)
	if got[0] != want {
		t.Errorf("windows, elements, first and last window: %s, want %s", got[0], want)
	}
	t.Logf("%s rows visible while the job ran; markers %v", during[0], db.Strings(t, `SELECT sink, epoch FROM weir_sink_markers`))
}
