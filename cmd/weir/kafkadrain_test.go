package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafka"
	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/runner"
)

// drainEvent is one input record of TestKafkaDrainExactlyOnce: its
// partition, key, value and event time.
type drainEvent struct {
	part  int32
	key   string
	value int
	ts    time.Time
}

// drainWindow is the key of one output record: a key's one-minute window.
type drainWindow struct {
	key   string
	start int64 // ms
}

// drainAgg is what the pipeline writes per key and window.
type drainAgg struct{ sum, count int }

// drainKV parses an input record's value as the number to sum.
func drainKV(k, v []byte) (string, int) {
	n, _ := strconv.Atoi(string(v))
	return string(k), n
}

func drainOne(k string, _ int) (string, int) { return k, 1 }

// drainFormat writes a key's window as "start ms:sum:count".
func drainFormat(w beam.Window, k string, sums, counts func(*int) bool) ([]byte, []byte) {
	var sum, count, n int
	for sums(&n) {
		sum += n
	}
	for counts(&n) {
		count += n
	}
	return []byte(k), []byte(fmt.Sprintf("%d:%d:%d", w.(window.IntervalWindow).Start, sum, count))
}

func init() {
	register.Function2x2(drainKV)
	register.Function2x2(drainOne)
	register.Function4x2(drainFormat)
	register.Iter1[int]()
}

// drainEvents makes the input: three keys in eight one-minute windows from
// base over four partitions. Partition 3 gets records in windows 0 to 2 in
// the first phase and in 3 and 4 in the second, the others 0 to 5 and then
// 6 and 7, so the source's watermark (the minimum over its partitions)
// closes windows 0 and 1 in the first phase, 2 and 3 in the second, and
// 4 to 7 stay open until the drain.
func drainEvents(base time.Time, phase int) []drainEvent {
	var out []drainEvent
	n := 0
	add := func(part int32, win int) {
		for i := range 5 {
			n++
			out = append(out, drainEvent{part: part, key: fmt.Sprint("k", (n+i)%3), value: phase*1000 + n,
				ts: base.Add(time.Duration(win)*time.Minute + time.Duration(i*11+int(part))*time.Second)})
		}
	}
	for part := range int32(3) {
		for win := range 6 {
			if phase == 1 {
				add(part, win)
			} else if win < 2 {
				add(part, 6+win)
			}
		}
	}
	for win := range 3 {
		if phase == 1 {
			add(3, win)
		} else if win < 2 {
			add(3, 3+win)
		}
	}
	return out
}

func produceEvents(t *testing.T, c *kafkatest.Broker, topic string, evs []drainEvent) {
	t.Helper()
	p, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var recs []*kgo.Record
	for _, e := range evs {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: e.part, Key: []byte(e.key),
			Value: []byte(strconv.Itoa(e.value)), Timestamp: e.ts})
	}
	if err := p.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// wantWindows returns the aggregate of every key's window of evs.
func wantWindows(evs []drainEvent) map[drainWindow]drainAgg {
	want := map[drainWindow]drainAgg{}
	for _, e := range evs {
		w := drainWindow{e.key, e.ts.UnixMilli() - e.ts.UnixMilli()%60_000}
		a := want[w]
		a.sum += e.value
		a.count++
		want[w] = a
	}
	return want
}

// committedWindows reads topic with read_committed isolation up to a
// sentinel it appends to each partition (an open transaction holds the
// sentinel back; each call's sentinel is its own), and returns each key's window with how often it was
// written. Records that do not parse count under an empty key.
func committedWindows(t *testing.T, c *kafkatest.Broker, topic string, partitions int32) map[drainWindow][]drainAgg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	sentinel := fmt.Sprintf("sentinel %d", time.Now().UnixNano())
	for part := range partitions {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte(sentinel)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[drainWindow][]drainAgg{}
	for seen := 0; seen < int(partitions); {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if v := string(r.Value); strings.HasPrefix(v, "sentinel ") {
				if v == sentinel {
					seen++
				}
				return
			}
			var start int64
			var a drainAgg
			if _, err := fmt.Sscanf(string(r.Value), "%d:%d:%d", &start, &a.sum, &a.count); err != nil {
				got[drainWindow{}] = append(got[drainWindow{}], a)
				return
			}
			w := drainWindow{string(r.Key), start}
			got[w] = append(got[w], a)
		})
	}
	return got
}

// recordsRead returns the job's count of records its Kafka sources read,
// from the job service's metrics.
func recordsRead(ctx context.Context, c jobpb.JobServiceClient, job string) (int64, error) {
	resp, err := c.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: job})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, mi := range resp.GetMetrics().GetAttempted() {
		if mi.GetLabels()["NAMESPACE"] == kafka.MetricsNamespace && mi.GetLabels()["NAME"] == kafka.MetricRecords {
			v, _ := binary.Uvarint(mi.GetPayload())
			n += int64(v)
		}
	}
	return n, nil
}

// kafkaJob is a streaming Kafka job (runDrainJob) on a job service
// made as weir serve makes it, submitted through Beam's universal runner
// with LOOPBACK workers.
type kafkaJob struct {
	t        *testing.T
	ctx      context.Context
	endpoint string
	client   jobpb.JobServiceClient
	id       string
	done     chan error
	started  time.Time
}

// runDrainJob runs a job that reads read, sums and counts each key's
// values in one-minute event-time windows and writes every window to
// topic out with the exactly-once sink, checkpointing every 200 ms. It
// returns once the job is RUNNING.
func runDrainJob(t *testing.T, c *kafkatest.Broker, read kafkaio.ReadConfig, out string) *kafkaJob {
	t.Helper()
	srv := runner.NewServer(&runner.LocalExecutor{StateDir: t.TempDir()},
		runner.ServerOptions{StagingRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	j := &kafkaJob{t: t, endpoint: srv.Endpoint(), done: make(chan error, 1)}
	name := fmt.Sprintf("kafka-drain-%d", time.Now().UnixNano())
	t.Cleanup(func(e, n, env string) func() {
		return func() { *jobopts.Endpoint, *jobopts.JobName, *jobopts.EnvironmentType = e, n, env }
	}(*jobopts.Endpoint, *jobopts.JobName, *jobopts.EnvironmentType))
	*jobopts.Endpoint, *jobopts.JobName, *jobopts.EnvironmentType = j.endpoint, name, "LOOPBACK"
	beam.PipelineOptions.Set(runner.CheckpointIntervalOption, "200ms")
	t.Cleanup(func() { beam.PipelineOptions.Set(runner.CheckpointIntervalOption, "") })

	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	read.BootstrapServers = c.Addrs
	kvs := beam.WindowInto(s, window.NewFixedWindows(time.Minute), beam.ParDo(s, drainKV, kafkaio.Read(s, read)))
	sums := stats.SumPerKey(s, kvs)
	counts := stats.SumPerKey(s, beam.ParDo(s, drainOne, kvs))
	kafkaio.Write(s, kafkaio.WriteConfig{BootstrapServers: c.Addrs, Topic: out, Semantic: kafkaio.ExactlyOnce},
		beam.ParDo(s, drainFormat, beam.CoGroupByKey(s, sums, counts)))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	j.ctx = ctx
	j.started = time.Now()
	go func() { _, err := runner.Execute(ctx, p); j.done <- err }()
	conn, err := grpc.NewClient(j.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	j.client = jobpb.NewJobServiceClient(conn)
	j.wait("it ran", func() bool {
		resp, err := j.client.GetJobs(ctx, &jobpb.GetJobsRequest{})
		for _, info := range resp.GetJobInfo() {
			if err == nil && info.GetJobName() == name && info.GetState() == jobpb.JobState_RUNNING {
				j.id = info.GetJobId()
			}
		}
		return j.id != ""
	})
	return j
}

// wait polls until cond holds, failing the test if the job ends first.
func (j *kafkaJob) wait(what string, cond func() bool) {
	j.t.Helper()
	for !cond() {
		select {
		case err := <-j.done:
			j.t.Fatalf("the job ended (%v) before %s", err, what)
		case <-j.ctx.Done():
			j.t.Fatalf("timed out waiting for %s", what)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// drain drains the job with `weir drain JOB` and checks that it ends
// DRAINED.
func (j *kafkaJob) drain() {
	t := j.t
	t.Helper()
	var out, errOut bytes.Buffer
	if code := runMain(&out, &errOut, "drain", "--endpoint="+j.endpoint, j.id); code != 0 {
		t.Fatalf("weir drain %s: exit %d: %s", j.id, code, errOut.String())
	}
	if !strings.Contains(out.String(), "DRAINING") {
		t.Errorf("weir drain printed %q, want the job DRAINING", out.String())
	}
	select {
	case err := <-j.done:
		if err != nil {
			t.Fatalf("drained job: %v", err)
		}
	case <-j.ctx.Done():
		t.Fatal("the drained job did not end")
	}
	t.Logf("the job ended %v after it started", time.Since(j.started).Round(time.Millisecond))
	st, err := j.client.GetState(context.Background(), &jobpb.GetJobStateRequest{JobId: j.id})
	if err != nil || st.GetState() != jobpb.JobState_DRAINED {
		t.Fatalf("job state %v (%v), want DRAINED", st.GetState(), err)
	}
}

// checkWindows checks that got holds every key-window of want once, with
// its aggregate, and nothing else.
func checkWindows(t *testing.T, base time.Time, got map[drainWindow][]drainAgg, want map[drainWindow]drainAgg) {
	t.Helper()
	for _, w := range slices.SortedFunc(maps.Keys(want), func(a, b drainWindow) int {
		return cmp.Or(cmp.Compare(a.start, b.start), strings.Compare(a.key, b.key))
	}) {
		if g := got[w]; len(g) != 1 || g[0] != want[w] {
			t.Errorf("window %s at +%v: read_committed sees %v, want %v once", w.key, time.UnixMilli(w.start).Sub(base), g, want[w])
		}
	}
	for w, g := range got {
		if _, ok := want[w]; !ok {
			t.Errorf("unexpected output %s at +%v: %v", w.key, time.UnixMilli(w.start).Sub(base), g)
		}
	}
}

// TestKafkaDrainExactlyOnce drains a streaming Kafka job with `weir drain`
// and checks its exactly-once output. The job (runDrainJob) reads a
// 4-partition topic. Windows are committed while it runs; records
// produced while it runs are read; then `weir drain JOB` drains it. It
// must end DRAINED, and a read_committed consumer of the output must see
// every window of the input exactly once with its exact sum and count,
// the windows still open at the drain included, and nothing else.
func TestKafkaDrainExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a streaming job")
	}
	kafkatest.Each(t, testKafkaDrainExactlyOnce)
}

func testKafkaDrainExactlyOnce(t *testing.T, c *kafkatest.Broker) {
	events, sums := c.Topic(t, "events", 4), c.Topic(t, "sums", 2)
	base := time.UnixMilli(1_700_000_040_000) // on a minute
	first, second := drainEvents(base, 1), drainEvents(base, 2)
	produceEvents(t, c, events, first)
	j := runDrainJob(t, c, kafkaio.ReadConfig{Topics: []string{events}}, sums)

	want := wantWindows(append(slices.Clone(first), second...))
	// closed returns whether every key's window before end (of both
	// phases' input) is committed.
	closed := func(end int) func() bool {
		return func() bool {
			got := committedWindows(t, c, sums, 2)
			for w := range want {
				if w.start < base.Add(time.Duration(end)*time.Minute).UnixMilli() && len(got[w]) == 0 {
					return false
				}
			}
			return true
		}
	}
	j.wait("windows 0 and 1 were committed", closed(2))
	produceEvents(t, c, events, second)
	j.wait("windows 2 and 3 were committed", closed(4))
	total := int64(len(first) + len(second))
	j.wait("the source read every record", func() bool {
		n, err := recordsRead(j.ctx, j.client, j.id)
		return err == nil && n == total
	})

	// Before the drain: windows 0 to 3 are committed, each once; 4 to 7
	// are open, the watermark held in window 4 by partition 3.
	open := 0
	before := committedWindows(t, c, sums, 2)
	for w := range want {
		switch n := len(before[w]); {
		case w.start >= base.Add(4*time.Minute).UnixMilli():
			open++
			if n != 0 {
				t.Errorf("window %s at +%v committed before the drain", w.key, time.UnixMilli(w.start).Sub(base))
			}
		case n != 1:
			t.Errorf("window %s at +%v committed %d times before the drain, want once", w.key, time.UnixMilli(w.start).Sub(base), n)
		}
	}
	if open != 12 || len(want) != 24 {
		t.Fatalf("%d of %d key-windows open at the drain, want 12 of 24 (3 keys in 8 windows)", open, len(want))
	}
	t.Logf("draining job %s after %v: %d records read, %d of %d key-windows committed", j.id, time.Since(j.started).Round(time.Millisecond), total, len(before), len(want))
	j.drain()
	checkWindows(t, base, committedWindows(t, c, sums, 2), want)
}

// producedEvent is a drainEvent with the offset Kafka gave it.
type producedEvent struct {
	drainEvent
	offset int64
}

// produceUntil produces records to 4 partitions of topic, one at a time,
// until stop closes: each 1.5 s of event time after the last, round
// robin over the partitions, keys k0 to k2. It returns the records with
// their offsets.
func produceUntil(t *testing.T, c *kafkatest.Broker, topic string, base time.Time, stop <-chan struct{}) <-chan []producedEvent {
	out := make(chan []producedEvent, 1)
	p, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer p.Close()
		var evs []producedEvent
		defer func() { out <- evs }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			e := drainEvent{part: int32(i % 4), key: fmt.Sprint("k", i%3), value: i + 1, ts: base.Add(time.Duration(i) * 1500 * time.Millisecond)}
			r, err := p.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Partition: e.part, Key: []byte(e.key),
				Value: []byte(strconv.Itoa(e.value)), Timestamp: e.ts}).First()
			if err != nil {
				t.Errorf("producing: %v", err)
				return
			}
			evs = append(evs, producedEvent{e, r.Offset})
		}
	}()
	return out
}

// groupNext returns the next offsets group committed for topic, by
// partition.
func groupNext(t *testing.T, c *kafkatest.Broker, group, topic string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	next := map[int32]int64{}
	for _, parts := range resps {
		for p, r := range parts {
			if r.Topic == topic && r.Err == nil {
				next[p] = r.At
			}
		}
	}
	return next
}

// TestKafkaDrainMidStream drains the job of TestKafkaDrainExactlyOnce
// while records still arrive. The read commits its offsets to a group
// when it ends (commit_offsets_in_finalize), which says exactly what it
// read: read_committed must see every key-window of those records once,
// with its exact sum and count, the windows open at the drain included,
// and nothing of the records after them.
func TestKafkaDrainMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a streaming job")
	}
	kafkatest.Each(t, testKafkaDrainMidStream)
}

func testKafkaDrainMidStream(t *testing.T, c *kafkatest.Broker) {
	events, sums := c.Topic(t, "events", 4), c.Topic(t, "sums", 2)
	group := c.Name(t, "drain-g")
	base := time.UnixMilli(1_700_000_040_000)
	stop := make(chan struct{})
	produced := produceUntil(t, c, events, base, stop)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			<-produced
		}
	}()
	j := runDrainJob(t, c, kafkaio.ReadConfig{Topics: []string{events}, CommitOffsetsInFinalize: true,
		ConsumerConfig: map[string]string{"group.id": group}}, sums)
	var before map[drainWindow][]drainAgg
	j.wait("three windows were committed", func() bool {
		before = committedWindows(t, c, sums, 2)
		starts := map[int64]bool{}
		for w := range before {
			starts[w.start] = true
		}
		return len(starts) >= 3
	})
	t.Logf("draining job %s after %v, %d key-windows committed", j.id, time.Since(j.started).Round(time.Millisecond), len(before))
	j.drain()
	close(stop)
	evs := <-produced

	next := groupNext(t, c, group, events)
	var read []drainEvent
	for _, e := range evs {
		if e.offset < next[e.part] {
			read = append(read, e.drainEvent)
		}
	}
	if len(next) != 4 || len(read) == len(evs) {
		t.Fatalf("group offsets %v for %d records produced: want all 4 partitions, and records produced after the drain", next, len(evs))
	}
	want := wantWindows(read)
	if len(want) <= len(before) {
		t.Errorf("%d key-windows in what was read, %d committed before the drain: the drain fired no window", len(want), len(before))
	}
	t.Logf("%d of %d records read, %d key-windows", len(read), len(evs), len(want))
	checkWindows(t, base, committedWindows(t, c, sums, 2), want)
}
