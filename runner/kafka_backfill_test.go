package runner

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/kafka"
	"github.com/weir-runner/weir/kafkaio"
	weirstate "github.com/weir-runner/weir/state"
)

var backfillBench = flag.Bool("backfill", false, "run the Kafka backfill benchmark (make bench-backfill)")

var backfillSkews = flag.String("backfill_skews", "4,12", "skews to run, comma-separated")

func backfillSkewList() []int {
	var out []int
	for _, f := range strings.Split(*backfillSkews, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n >= 1 {
			out = append(out, n)
		}
	}
	return out
}

func backfillSink(int) {}

func init() { register.Function1x0(backfillSink) }

// TestBackfillBench is `make bench-backfill`: a backfill of three days of
// event time from 12 partitions that run at uneven speeds in event time
// (partition p has a record every 20(1 + p(skew-1)/11) seconds, so the
// sparsest is skew times sparser than the densest, and the consumer
// fetches about as many bytes from each), collected per key in one-minute
// windows by a stateful DoFn that keeps each window's elements in a bag
// until the window closes. At two skews it runs the job with alignment off
// and with a 30 s maximum drift, and reports the peak window state in the
// job's store (bag records, their bytes, and open key-windows) and the
// throughput. Without alignment the fast partitions open days of windows
// that wait for the slowest one, more the larger the skew; with it, the
// state is bounded by the drift and the granularity of a fetch.
func TestBackfillBench(t *testing.T) {
	if !*backfillBench {
		t.Skip("the backfill benchmark runs with -backfill (make bench-backfill)")
	}
	t.Logf("%-5s %-26s %8s %10s %7s %9s %12s %6s %9s", "skew", "run", "records", "state rec", "bytes", "windows",
		"peak spread", "paused", "rec/s")
	for _, skew := range backfillSkewList() {
		c, total := backfillTopic(t, skew)
		for _, run := range []struct {
			name   string
			align  bool
			buffer int
		}{{"alignment off", false, 0}, {"30 s max drift", true, 0}, {"30 s max drift, buffer 3", true, 3}} {
			if skew != 12 && run.buffer != 0 {
				continue
			}
			cfg := kafkaio.ReadConfig{BootstrapServers: c.ListenAddrs(), Topics: []string{"events"}, MaxRecords: int64(total),
				// Small fetches, so that partitions advance a few records at a
				// time and their speeds in event time differ as in a real
				// backfill.
				ConsumerConfig: map[string]string{"max.partition.fetch.bytes": "2048"}}
			if run.align {
				buffer := run.buffer
				cfg.AlignmentGroup, cfg.MaxDriftMillis, cfg.SampleBuffer = "backfill", 30_000, &buffer
				// A partition that runs dry goes idle and stops holding the
				// bound; without an idle timeout, paused partitions wait for
				// it forever (docs/kafka.md).
				cfg.IdleTimeoutMillis = 1000
			}
			r := backfillRun(t, cfg)
			t.Logf("%-5d %-26s %8d %10d %6dK %9d %12v %6d %9.0f", skew, run.name, total, r.peak, r.bytes>>10, r.windows,
				r.spread.Round(time.Minute), r.paused, float64(total)/r.wall.Seconds())
		}
		c.Close()
	}
}

// backfillTopic makes a broker whose topic "events" holds three days of
// events in 12 partitions, the sparsest skew times sparser than the
// densest.
func backfillTopic(t *testing.T, skew int) (*kfake.Cluster, int) {
	const (
		partitions = 12
		days       = 3
		keys       = 10
	)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "events"))
	if err != nil {
		t.Fatal(err)
	}
	base := time.UnixMilli(1_700_000_040_000)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// Small batches: a fetch returns whole batches, so batches of a few
		// dozen records let partitions advance a few dozen records at a time.
		kgo.ProducerBatchMaxBytes(2048))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	total := 0
	value := make([]byte, 200) // events are a few hundred bytes: a fetch brings a dozen
	for p := range partitions {
		step := 20 * time.Second * time.Duration(11+p*(skew-1)) / 11
		var recs []*kgo.Record
		for ts := time.Duration(0); ts < days*24*time.Hour; ts += step {
			recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(p), Key: []byte(fmt.Sprint("k", total%keys)),
				Value: value, Timestamp: base.Add(ts)})
			total++
		}
		if err := pcl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return c, total
}

// backfillResult is what one run of the backfill showed.
type backfillResult struct {
	peak, windows, samples, paused int
	bytes                          int64
	spread                         time.Duration
	wall                           time.Duration
}

// backfillRun runs the backfill job once and samples, while it runs, the
// job's store for user state records and its metrics for the source's
// spread and paused partitions.
func backfillRun(t *testing.T, cfg kafkaio.ReadConfig) (r backfillResult) {
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	keys := beam.WindowInto(s, window.NewFixedWindows(time.Minute), beam.ParDo(s, kafkaKey, kafkaio.Read(s, cfg)))
	bags := beam.ParDo(s, &windowBagFn{Seen: state.MakeBagState[int]("seen"), Flush: timers.InEventTime("flush")},
		beam.ParDo(s, keyOne, keys))
	beam.ParDo0(s, backfillSink, bags)
	start := time.Now()
	executeSampling(t, p, 10*time.Minute, 10*time.Millisecond, func(stores []*weirstate.Store) {
		for _, st := range stores {
			if n, b, err := st.Usage(weirstate.KindUserState); err == nil {
				r.peak, r.bytes, r.samples = max(r.peak, n), max(r.bytes, b), r.samples+1
			}
			// One expiry-index record per key and window holding state.
			if n, err := st.Count(weirstate.KindUserGC); err == nil {
				r.windows = max(r.windows, n)
			}
		}
		if jobs := inProcessServer().Jobs(); len(jobs) > 0 {
			spread, paused := sourceGauges(jobs[len(jobs)-1])
			r.spread, r.paused = max(r.spread, spread), max(r.paused, paused)
		}
	})
	r.wall = time.Since(start)
	return r
}

// sourceGauges reads a job's Kafka spread and paused-partition gauges.
func sourceGauges(j *Job) (spread time.Duration, paused int) {
	for _, mi := range j.Metrics.Results().GetAttempted() {
		name := mi.GetLabels()["NAME"]
		if name != kafka.MetricSpread && name != kafka.MetricPaused {
			continue
		}
		b := mi.GetPayload()
		_, n := binary.Uvarint(b) // the gauge's time
		if n <= 0 {
			continue
		}
		v, m := binary.Uvarint(b[n:])
		if m <= 0 {
			continue
		}
		if name == kafka.MetricSpread {
			spread = time.Duration(v) * time.Millisecond
		} else {
			paused = int(v)
		}
	}
	return spread, paused
}
