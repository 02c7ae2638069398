package runner

import (
	"cmp"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
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

var (
	backfillSkews      = flag.String("backfill_skews", "1,4,12", "skews to run, comma-separated")
	backfillRuns       = flag.String("backfill_runs", "off,offstop,drift,driftstop,drift0,drift250,noidle,idle200,buffer3", "runs to make at each skew, comma-separated (buffer3 at skew 12 only)")
	backfillFetchBytes = flag.Int("backfill_fetch_bytes", 8192, "bytes per partition and fetch, and per produced batch")
	backfillSample     = flag.Duration("backfill_sample", 100*time.Millisecond, "how often to sample the job's store")
	backfillRepeat     = flag.Int("backfill_repeat", 1, "rounds of every run at each skew; rows are medians")
)

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
// event time from 12 partitions, collected per key in one-minute windows
// by a stateful DoFn that keeps each window's elements in a bag until the
// window closes. Every skew reads the same records (backfillTopic): only
// how fast each partition is read in event time changes, the fastest
// about skew times faster than the slowest. At each skew it runs the job
// with alignment off and with a 30 s maximum drift (and a 1 s idle
// timeout, so a partition whose log has ended stops holding the
// watermark; one run has none, to show the staggered log ends), and
// reports the peak window state in the job's store (bag records, their
// bytes, and open key-windows) and the throughput. Without alignment the
// fast partitions open windows that wait for the slowest one, more the
// larger the skew; with it, the state is bounded by the drift and the
// granularity of a fetch, whatever the skew.
func TestBackfillBench(t *testing.T) {
	if !*backfillBench {
		t.Skip("the backfill benchmark runs with -backfill (make bench-backfill)")
	}
	t.Logf("%-5s %-34s %8s %10s %7s %9s %8s %12s %6s %6s %6s %9s %9s", "skew", "run", "records", "state rec", "bytes", "windows",
		"at end", "peak spread", "paused", "99% at", "wall", "rec/s", "/ off")
	for _, skew := range backfillSkewList() {
		c, total := backfillTopic(t, skew)
		runs := backfillRunsAt(skew)
		// Each round runs every configuration once, in turn, so that the
		// machine's load moves under all of them alike; a row is the run
		// of median wall time.
		results := make([][]backfillResult, len(runs))
		for round := range *backfillRepeat {
			for i, run := range runs {
				r := backfillRun(t, run.config(c, total), total)
				t.Logf("      round %d: %s: %.1f s", round+1, run.name, r.wall.Seconds())
				results[i] = append(results[i], r)
			}
		}
		var offRate float64
		for i, run := range runs {
			r := medianWall(results[i])
			rate := float64(total) / r.wall.Seconds()
			if run.key == "off" {
				offRate = rate
			}
			ratio := "-"
			if offRate > 0 {
				ratio = fmt.Sprintf("%.2f", rate/offRate)
			}
			t.Logf("%-5d %-34s %8d %10d %6dK %9d %8d %12v %6d %6.1f %6.1f %9.0f %9s", skew, run.name, total, r.peak, r.bytes>>10, r.windows,
				r.endPeak, r.spread.Round(time.Minute), r.paused, r.read99.Seconds(), r.wall.Seconds(), rate, ratio)
			t.Logf("      peak state at %v, %d records read", r.peakAt.Round(100*time.Millisecond), r.peakRead)
		}
		c.Close()
	}
}

// backfillConfig is one configuration of the backfill's read.
type backfillConfig struct {
	key      string
	name     string
	align    bool
	buffer   int
	interval int64 // update_interval_millis; 0: the default, 1 s
	idle     int64 // idle_timeout_millis
	coalesce *bool // coalesce_watermarks; nil: the default, true
	// stop reads each partition to its end at the start (stop "latest")
	// instead of max_records in all: a partition then ends, and leaves
	// the watermark and the group, as soon as it is read.
	stop bool
}

var everyPoll = false

// backfillRunsAt returns the configurations -backfill_runs asks for at
// skew, "off" first (the ratio column divides by it).
func backfillRunsAt(skew int) []backfillConfig {
	var out []backfillConfig
	for _, run := range []backfillConfig{
		{key: "off", name: "alignment off"},
		{key: "offstop", name: "alignment off, stop at log ends", stop: true},
		{key: "drift", name: "30 s max drift", align: true, idle: 1000},
		{key: "driftstop", name: "30 s drift, stop at log ends", align: true, idle: 1000, stop: true},
		// The watermark as it was before coalescing: forwarded after
		// every poll, however far behind the job is.
		{key: "drift0", name: "30 s drift, watermark every poll", align: true, idle: 1000, coalesce: &everyPoll},
		// A partition runs dry after three update intervals of quiet,
		// and the staggered log ends make eleven such waits in turn at
		// the end of an aligned run: a shorter interval shows how much
		// of its wall time they are.
		{key: "drift250", name: "30 s drift, 250 ms update", align: true, interval: 250, idle: 1000},
		// Without an idle timeout the partition whose log ends first
		// keeps its watermark (it may get more records), so the
		// windows of the other partitions' last minutes stay open
		// until the source ends.
		{key: "noidle", name: "30 s drift, no idle timeout", align: true},
		// The tail is about one idle timeout per partition whose log ends
		// after another's: a shorter one shortens it.
		{key: "idle200", name: "30 s drift, 200 ms idle timeout", align: true, idle: 200},
		{key: "buffer3", name: "30 s max drift, buffer 3", align: true, buffer: 3, idle: 1000},
	} {
		if skew != 12 && run.buffer != 0 || !strings.Contains(","+*backfillRuns+",", ","+run.key+",") {
			continue
		}
		out = append(out, run)
	}
	return out
}

// config returns the read's configuration of run over c's topic.
func (run backfillConfig) config(c *kfake.Cluster, total int) kafkaio.ReadConfig {
	cfg := kafkaio.ReadConfig{BootstrapServers: c.ListenAddrs(), Topics: []string{"events"}, MaxRecords: int64(total),
		// A fixed number of bytes per partition and fetch, so that
		// partitions advance at speeds in event time set by their
		// record sizes. Smaller fetches would align more finely but
		// make the slowest partition's tail a round trip per record
		// or two.
		ConsumerConfig:     map[string]string{"max.partition.fetch.bytes": fmt.Sprint(*backfillFetchBytes)},
		CoalesceWatermarks: run.coalesce}
	if run.stop {
		cfg.MaxRecords, cfg.Stop = 0, kafkaio.StopLatest
	}
	if run.align {
		// A partition that has read its whole log stops holding the
		// bound once it is dry (docs/kafka.md); the idle timeout
		// lets the watermark pass it too.
		buffer := run.buffer
		cfg.AlignmentGroup, cfg.MaxDriftMillis, cfg.SampleBuffer = "backfill", 30_000, &buffer
		cfg.UpdateIntervalMillis, cfg.IdleTimeoutMillis = run.interval, run.idle
	}
	return cfg
}

// medianWall returns the result of median wall time (the lower middle of
// an even number).
func medianWall(rs []backfillResult) backfillResult {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b backfillResult) int { return cmp.Compare(a.wall, b.wall) })
	return s[(len(s)-1)/2]
}

// backfillTopic makes a broker whose topic "events" holds three days of
// events in 12 partitions, the same records at every skew: in each
// partition p a record a minute for three days from 5p minutes on, over
// 10 keys. Only the sizes of their
// values change with the skew: partition p's are proportional to 1/f(p),
// f(p) = 1 + p(skew-1)/11, scaled so that the values average 200 bytes.
// The consumer fetches a fixed number of bytes per partition, so it reads
// partition p about f(p) times as fast in event time as partition 0: the
// fastest about skew times as fast as the slowest, as in a backfill whose
// partitions differ in record size, broker load or decoding cost. The
// records, their event times and their total bytes are the same at every
// skew.
func backfillTopic(t *testing.T, skew int) (*kfake.Cluster, int) {
	const (
		partitions = 12
		days       = 3
		keys       = 10
		step       = time.Minute
		meanValue  = 200 // bytes
	)
	speed := func(p int) float64 { return 1 + float64(p*(skew-1))/(partitions-1) }
	inverse := 0.0
	for p := range partitions {
		inverse += 1 / speed(p)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "events"))
	if err != nil {
		t.Fatal(err)
	}
	base := time.UnixMilli(1_700_000_040_000)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// Small batches: a fetch returns whole batches, so batches of at
		// most a fetch's bytes let partitions advance a fetch at a time.
		// Uncompressed, so that a record's size on the broker is its size.
		kgo.ProducerBatchMaxBytes(int32(*backfillFetchBytes)), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	total := 0
	for p := range partitions {
		// A fetch brings about backfill_fetch_bytes/(size+overhead) records.
		value := make([]byte, int(meanValue*partitions/speed(p)/inverse+0.5))
		var recs []*kgo.Record
		// Partition p starts 5p minutes after partition 0, so the logs end
		// up to 55 minutes apart: the slowest partition runs dry while
		// others still have records to read past the bound, which stalled
		// aligned runs before dry partitions stopped holding it.
		for i, ts := 0, time.Duration(p)*5*time.Minute; i < days*24*60; i, ts = i+1, ts+step {
			// Each minute's 12 records spread over the keys: a minute
			// opens 10 key-windows.
			minute := 5*p + i
			recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(p), Key: []byte(fmt.Sprint("k", (p+minute)%keys)),
				Value: value, Timestamp: base.Add(ts)})
			total++
		}
		if err := pcl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return c, total
}

// backfillResult is what one run of the backfill showed. The peak state
// (peak, bytes, windows) is over the samples taken while the source was
// reading; endPeak, the most user state records sampled after it had
// finished, while the job fired its last windows.
type backfillResult struct {
	peak, windows, samples, paused int
	endPeak                        int
	bytes                          int64
	spread                         time.Duration
	wall                           time.Duration
	peakAt                         time.Duration // when the peak state was sampled
	peakRead                       int64         // records read then
	// read99 is when the source had read 99% of the records (to a
	// sample's precision): the rest of the wall time is the tail, where
	// the partitions whose logs end last wait in turn for those that
	// ended before them to go idle.
	read99 time.Duration
}

// backfillRun runs the backfill job once and samples, while it runs, the
// job's store for user state records and its metrics for the source's
// spread and paused partitions.
func backfillRun(t *testing.T, cfg kafkaio.ReadConfig, total int) (r backfillResult) {
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	keys := beam.WindowInto(s, window.NewFixedWindows(time.Minute), beam.ParDo(s, kafkaKey, kafkaio.Read(s, cfg)))
	bags := beam.ParDo(s, &windowBagFn{Seen: state.MakeBagState[int]("seen"), Flush: timers.InEventTime("flush")},
		beam.ParDo(s, keyOne, keys))
	beam.ParDo0(s, backfillSink, bags)
	start := time.Now()
	logged := start
	// Every 100 ms by default: each sample scans the whole store,
	// and more often would slow the job it measures.
	executeSampling(t, p, 10*time.Minute, *backfillSample, func(stores []*weirstate.Store) {
		// One scan for records, bytes and scopes (the key-windows holding
		// state): the sampler's scans take CPU from the job it measures.
		var u weirstate.UserUsage
		sampled := false
		for _, st := range stores {
			if su, err := st.UserUsage(); err == nil {
				u.Records, u.Bytes, u.Scopes = max(u.Records, su.Records), max(u.Bytes, su.Bytes), max(u.Scopes, su.Scopes)
				sampled = true
			}
		}
		jobs := inProcessServer().Jobs()
		if !sampled || len(jobs) == 0 {
			return
		}
		// The gauges are read after the store: a source that has finished
		// by now had finished, or nearly, when the store was scanned.
		g := sourceGauges(jobs[len(jobs)-1])
		if r.read99 == 0 && g.records*100 >= int64(total)*99 {
			r.read99 = time.Since(start)
		}
		r.spread, r.paused, r.samples = max(r.spread, g.spread), max(r.paused, g.paused), r.samples+1
		if g.finished {
			// The end of the read: the records the reader delivered while
			// a dry partition held the watermark reach the windows at
			// once and are collected as the last windows fire. Kept apart
			// from the peak while reading, which alignment bounds.
			r.endPeak = max(r.endPeak, u.Records)
		} else if u.Records > r.peak {
			r.peak, r.peakAt, r.peakRead = u.Records, time.Since(start), g.records
		}
		if !g.finished {
			r.bytes, r.windows = max(r.bytes, u.Bytes), max(r.windows, u.Scopes)
		}
		if time.Since(logged) >= 10*time.Second {
			logged = time.Now()
			t.Logf("  %v: %d records read, peak state %d records", time.Since(start).Round(time.Second), g.records, r.peak)
		}
	})
	r.wall = time.Since(start)
	return r
}

// sourceSample is what a job's Kafka source gauges say.
type sourceSample struct {
	spread   time.Duration
	paused   int
	records  int64
	finished bool // the source's watermark is at the end of time
}

// sourceGauges reads a job's Kafka spread, paused-partition and watermark
// gauges and its count of records read.
func sourceGauges(j *Job) (g sourceSample) {
	for _, mi := range j.Metrics.Results().GetAttempted() {
		name := mi.GetLabels()["NAME"]
		b := mi.GetPayload()
		if name == kafka.MetricRecords {
			n, _ := binary.Uvarint(b)
			g.records = int64(n)
			continue
		}
		if name != kafka.MetricSpread && name != kafka.MetricPaused && name != kafka.MetricWatermark {
			continue
		}
		_, n := binary.Uvarint(b) // the gauge's time
		if n <= 0 {
			continue
		}
		v, m := binary.Uvarint(b[n:])
		if m <= 0 {
			continue
		}
		switch name {
		case kafka.MetricSpread:
			g.spread = time.Duration(v) * time.Millisecond
		case kafka.MetricPaused:
			g.paused = int(v)
		case kafka.MetricWatermark:
			g.finished = int64(v) >= int64(mtime.MaxTimestamp)
		}
	}
	return g
}
