package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafka"
	"github.com/weir-runner/weir/kafkaio"
)

func kafkaKey(k, _ []byte) string { return string(k) }

// kafkaWindowCount formats a count per key and window as a record: the
// key, and "window start ms:count".
func kafkaWindowCount(w beam.Window, k string, n int) ([]byte, []byte) {
	return []byte(k), []byte(fmt.Sprintf("%d:%d", w.(window.IntervalWindow).Start, n))
}

func init() {
	register.Function2x1(kafkaKey)
	register.Function3x2(kafkaWindowCount)
}

// TestKafkaEndToEnd produces records to a 3-partition topic, on kfake and
// on the real broker, runs a pipeline on weir that reads them (bounded by
// max_records), counts them per key in fixed one-minute windows and
// writes the counts to another topic, then reads that topic back and
// checks every count.
func TestKafkaEndToEnd(t *testing.T) { kafkatest.Each(t, testKafkaEndToEnd) }

func testKafkaEndToEnd(t *testing.T, c *kafkatest.Broker) {
	clicks, countsTopic := c.Topic(t, "clicks", 3), c.Topic(t, "counts", 3)
	const n = 300
	base := time.UnixMilli(1_700_000_040_000) // on a minute
	want := map[string]int{}                  // "key window-start:count" lines
	var recs []*kgo.Record
	for i := range n {
		ts := base.Add(time.Duration(i*i*2) * time.Millisecond) // uneven over three minutes
		key := fmt.Sprint("k", i%5)
		start := ts.UnixMilli() - ts.UnixMilli()%60_000
		want[fmt.Sprintf("%s %d", key, start)]++
		recs = append(recs, &kgo.Record{Topic: clicks, Partition: int32(i % 3), Key: []byte(key),
			Value: []byte(strconv.Itoa(i)), Timestamp: ts})
	}
	pcl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := pcl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	in := kafkaio.Read(s, kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{clicks}, MaxRecords: n})
	keys := beam.WindowInto(s, window.NewFixedWindows(time.Minute), beam.ParDo(s, kafkaKey, in))
	counts := beam.ParDo(s, kafkaWindowCount, stats.Count(s, keys))
	kafkaio.Write(s, kafkaio.WriteConfig{BootstrapServers: c.Addrs, Topic: countsTopic}, counts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Execute(ctx, p)
	if err != nil {
		t.Fatal(err)
	}

	// Read the counts back.
	r, err := kafka.Open(ctx, &kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{countsTopic},
		MaxRecords: int64(len(want))}, kafka.ReaderOptions{Name: "check", PollWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]int{}
	for !r.Done() {
		out, err := r.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range out {
			start, count, _ := strings.Cut(string(x.Value), ":")
			k := fmt.Sprintf("%s %s", x.Key, start)
			if _, dup := got[k]; dup {
				t.Errorf("count for %s written twice", k)
			}
			got[k], _ = strconv.Atoi(count)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts\n got %v\nwant %v", got, want)
	}
	if len(want) < 10 {
		t.Fatalf("only %d windows and keys: the test data does not spread", len(want))
	}

	q := res.Metrics().Query(func(r beam.MetricResult) bool {
		return r.Namespace() == kafka.MetricsNamespace && r.Name() == kafka.MetricRecords
	})
	if cs := q.Counters(); len(cs) != 1 || cs[0].Committed != n {
		t.Errorf("%s counters %+v, want one of %d", kafka.MetricRecords, cs, n)
	}
	// The source measures the arrival delay of every record it read, the
	// group-by-key of every accumulator it got.
	d := res.Metrics().Query(func(r beam.MetricResult) bool {
		return r.Namespace() == "weir" && r.Name() == "arrival_delay_ms" && !strings.Contains(r.Transform(), "GroupByKey")
	})
	var arrivals int64
	for _, dist := range d.Distributions() {
		arrivals += dist.Committed.Count
	}
	if arrivals != n {
		t.Errorf("arrival_delay_ms distributions %+v, want one over the source's %d records", d.Distributions(), n)
	}
}

// TestKafkaMissingTopicWarns runs a job whose topic does not exist yet:
// the job says so in a warning naming the source and the topic, keeps
// retrying, and reads the topic once it is created.
func TestKafkaMissingTopicWarns(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	in := kafkaio.Read(s, kafkaio.ReadConfig{BootstrapServers: c.ListenAddrs(), Topics: []string{"later"}, MaxRecords: 1})
	passertKeys(s, in, "k")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	TestMetricsReachPipelineResult(t) // starts the in-process server, so the job can be found
	before := len(inProcessServer().Jobs())
	done := make(chan error, 1)
	go func() { _, err := Execute(ctx, p); done <- err }()

	var warning string
	for warning == "" {
		if jobs := inProcessServer().Jobs(); len(jobs) > before {
			msgs, _, _ := jobs[len(jobs)-1].Updates(0)
			for _, m := range msgs {
				if strings.Contains(m.GetMessageText(), `kafka source`) && strings.Contains(m.GetMessageText(), `topic "later"`) {
					warning = m.GetMessageText()
				}
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the job ended (%v) before warning of the missing topic", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Logf("warning: %s", warning)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "later"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "later", Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func kafkaKeyOf(k, _ []byte) string { return string(k) }

func init() { register.Function2x1(kafkaKeyOf) }

// passertKeys asserts the keys of a KV<[]byte, []byte> PCollection.
func passertKeys(s beam.Scope, col beam.PCollection, keys ...any) {
	passert.Equals(s, beam.ParDo(s, kafkaKeyOf, col), keys...)
}

// TestKafkaSourceParallelismOption: a Kafka read whose configuration sets
// no parallelism runs as --weir_source_parallelism subtasks, as a Python
// or Java pipeline (whose read has no such field) would ask, and every
// record is read once.
func TestKafkaSourceParallelismOption(t *testing.T) {
	c := kafkatest.Fake(t)
	topic := c.Topic(t, "spread", 8)
	const n = 400
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 8), Key: []byte(fmt.Sprint("k", i%4)), Value: []byte("v")})
	}
	pcl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := pcl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	in := kafkaio.Read(s, kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{topic}, MaxRecords: n})
	passert.Count(s, beam.ParDo(s, kafkaKey, in), "records", n)
	beam.PipelineOptions.Set(SourceParallelismOption, "4")
	defer beam.PipelineOptions.Set(SourceParallelismOption, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := Execute(ctx, p); err != nil {
		t.Fatal(err)
	}
	jobs := inProcessServer().Jobs()
	var read []string
	for _, st := range jobs[len(jobs)-1].View().Stages {
		if !strings.Contains(st.Name, "kafkaio.Read") {
			continue
		}
		read = append(read, fmt.Sprint(st.Parallelism))
		for _, sub := range st.Subtasks {
			// Two partitions of 50 records each per subtask.
			if sub.ElementsOut != 2*n/8 {
				t.Errorf("subtask %d of the read emitted %d records, want %d", sub.Index, sub.ElementsOut, 2*n/8)
			}
		}
	}
	if len(read) != 1 || read[0] != "4" {
		t.Errorf("the read's stages ran with parallelism %v, want one with 4", read)
	}
}
