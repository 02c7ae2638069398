package kafka

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafkaio"
)

var (
	readBench         = flag.Bool("readbench", false, "run the Kafka read throughput benchmark (make bench-kafka-read)")
	readBenchRecords  = flag.Int("readbench_records", 4_000_000, "records in the topic, spread evenly over its partitions")
	readBenchValue    = flag.Int("readbench_value", 200, "bytes per record value")
	readBenchRuns     = flag.Int("readbench_runs", 5, "runs per parallelism; the table shows their median")
	readBenchSubtasks = flag.String("readbench_subtasks", "1,2,4", "source parallelisms to run, comma-separated")
)

// TestReadThroughputBench measures the Kafka read: a topic of 8
// partitions read to its end (max_records) by 1, 2 and 4 source subtasks,
// each a Source reading its share of the partitions (Owner), into one
// subtask that counts elements and bytes and does nothing else. It runs
// on kfake and, with a broker (make bench-kafka-read starts one), on real
// Kafka; each line is the median of -readbench_runs runs. The time is from
// the graph's start, which opens the readers, to its end, after the last
// record has reached the sink.
func TestReadThroughputBench(t *testing.T) {
	if !*readBench {
		t.Skip("the read throughput benchmark runs with -readbench (make bench-kafka-read)")
	}
	kafkatest.Each(t, runReadBench)
}

func runReadBench(t *testing.T, c *kafkatest.Broker) {
	const partitions = 8
	topic := c.Topic(t, "bench", partitions)
	n := *readBenchRecords
	value := make([]byte, *readBenchValue)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20))
	ctx := context.Background()
	for start := 0; start < n; start += 20_000 {
		var batch []*kgo.Record
		for i := start; i < min(start+20_000, n); i++ {
			batch = append(batch, &kgo.Record{Topic: topic, Partition: int32(i % partitions),
				Key: []byte(strconv.Itoa(i % 1000)), Value: value, Timestamp: time.UnixMilli(int64(1_700_000_000_000 + i))})
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s: %d records of %d-byte values in %d partitions", c.Kind, n, len(value), partitions)
	t.Logf("%-8s %10s %8s %8s   %s", "subtasks", "records/s", "MB/s", "wall", "runs (s)")
	for _, s := range strings.Split(*readBenchSubtasks, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || p < 1 {
			t.Fatalf("bad -readbench_subtasks %q", *readBenchSubtasks)
		}
		var walls []time.Duration
		for range *readBenchRuns {
			walls = append(walls, readOnce(t, c, topic, n, p))
		}
		slices.Sort(walls)
		med := walls[len(walls)/2]
		var runs []string
		for _, w := range walls {
			runs = append(runs, fmt.Sprintf("%.2f", w.Seconds()))
		}
		t.Logf("%-8d %10.0f %8.1f %7.2fs   %s", p, float64(n)/med.Seconds(),
			float64(n*len(value))/med.Seconds()/1e6, med.Seconds(), strings.Join(runs, " "))
	}
}

// readOnce reads the whole topic with p subtasks and returns the wall
// time; it fails the test unless the sink got every record once.
func readOnce(t *testing.T, c *kafkatest.Broker, topic string, n, p int) time.Duration {
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{topic}, MaxRecords: int64(n),
		Parallelism: p, ConsumerConfig: map[string]string{}}
	sink := &byteCountSink{}
	budget := NewBudget(int64(n), p)
	g := &executor.Graph{Nodes: []*executor.Node{
		{Name: "read", Parallelism: p, Outputs: 1, NewSource: func(sub int, _ *executor.Output) (executor.Source, error) {
			opts := ReaderOptions{Name: "read", Budget: budget}
			if p > 1 {
				opts.Assign = Assignment{Index: sub, Of: p}
			}
			return &Source{Config: &cfg, Transform: "read", Options: opts}, nil
		}},
		{Name: "count", Parallelism: 1, Inputs: []executor.NodeInput{{From: 0}},
			New: func(int, *executor.Output) (executor.Operator, error) { return sink, nil }},
	}}
	start := time.Now()
	if err := g.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	if got := sink.n.Load(); got != int64(n) {
		t.Fatalf("%d subtasks: the sink got %d records, want %d", p, got, n)
	}
	return wall
}

// byteCountSink counts what reaches it.
type byteCountSink struct{ n, bytes atomic.Int64 }

func (s *byteCountSink) Process(_ context.Context, _ int, elems [][]byte) error {
	s.n.Add(int64(len(elems)))
	for _, e := range elems {
		s.bytes.Add(int64(len(e)))
	}
	return nil
}
func (s *byteCountSink) Watermark(context.Context, int, mtime.Time) error  { return nil }
func (s *byteCountSink) Barrier(context.Context, executor.BarrierID) error { return nil }
func (s *byteCountSink) Finish(context.Context) error                      { return nil }
