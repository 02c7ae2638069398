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
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

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

func produceEvents(t *testing.T, c *kfake.Cluster, topic string, evs []drainEvent) {
	t.Helper()
	p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
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
func committedWindows(t *testing.T, c *kfake.Cluster, topic string, partitions int32) map[drainWindow][]drainAgg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
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

// TestKafkaDrainExactlyOnce drains a streaming Kafka job with `weir drain`
// and checks its exactly-once output. The job reads a 4-partition topic,
// sums and counts each key's values in one-minute event-time windows and
// writes every window with the exactly-once sink, checkpointing every
// 200 ms. Windows are committed while it runs; records produced while it
// runs are read; then `weir drain JOB` drains it. It must end DRAINED, and
// a read_committed consumer of the output must see every window of the
// input exactly once with its exact sum and count, the windows still open
// at the drain included, and nothing else.
func TestKafkaDrainExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a streaming job on kfake")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"), kfake.SeedTopics(2, "sums"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	base := time.UnixMilli(1_700_000_040_000) // on a minute
	first, second := drainEvents(base, 1), drainEvents(base, 2)
	produceEvents(t, c, "events", first)

	// The job service, as weir serve makes it.
	srv := runner.NewServer(&runner.LocalExecutor{StateDir: t.TempDir()},
		runner.ServerOptions{StagingRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	endpoint := srv.Endpoint()
	name := fmt.Sprintf("kafka-drain-%d", time.Now().UnixNano())
	defer func(e, n, env string) { *jobopts.Endpoint, *jobopts.JobName, *jobopts.EnvironmentType = e, n, env }(
		*jobopts.Endpoint, *jobopts.JobName, *jobopts.EnvironmentType)
	*jobopts.Endpoint, *jobopts.JobName, *jobopts.EnvironmentType = endpoint, name, "LOOPBACK"
	beam.PipelineOptions.Set(runner.CheckpointIntervalOption, "200ms")
	defer beam.PipelineOptions.Set(runner.CheckpointIntervalOption, "")

	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	in := kafkaio.Read(s, kafkaio.ReadConfig{BootstrapServers: c.ListenAddrs(), Topics: []string{"events"}})
	kvs := beam.WindowInto(s, window.NewFixedWindows(time.Minute), beam.ParDo(s, drainKV, in))
	sums := stats.SumPerKey(s, kvs)
	counts := stats.SumPerKey(s, beam.ParDo(s, drainOne, kvs))
	kafkaio.Write(s, kafkaio.WriteConfig{BootstrapServers: c.ListenAddrs(), Topic: "sums", Semantic: kafkaio.ExactlyOnce},
		beam.ParDo(s, drainFormat, beam.CoGroupByKey(s, sums, counts)))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	started := time.Now()
	go func() { _, err := runner.Execute(ctx, p); done <- err }()

	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := jobpb.NewJobServiceClient(conn)
	var job string
	// wait polls until cond holds, failing the test if the job ends first.
	wait := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case err := <-done:
				t.Fatalf("the job ended (%v) before %s", err, what)
			case <-ctx.Done():
				t.Fatalf("timed out waiting for %s", what)
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	wait("it ran", func() bool {
		resp, err := client.GetJobs(ctx, &jobpb.GetJobsRequest{})
		for _, j := range resp.GetJobInfo() {
			if err == nil && j.GetJobName() == name && j.GetState() == jobpb.JobState_RUNNING {
				job = j.GetJobId()
			}
		}
		return job != ""
	})
	want := wantWindows(append(slices.Clone(first), second...))
	// closed returns whether every key's window before end (of both
	// phases' input) is committed.
	closed := func(end int) func() bool {
		return func() bool {
			got := committedWindows(t, c, "sums", 2)
			for w := range want {
				if w.start < base.Add(time.Duration(end)*time.Minute).UnixMilli() && len(got[w]) == 0 {
					return false
				}
			}
			return true
		}
	}
	wait("windows 0 and 1 were committed", closed(2))
	produceEvents(t, c, "events", second)
	wait("windows 2 and 3 were committed", closed(4))
	total := int64(len(first) + len(second))
	wait("the source read every record", func() bool {
		n, err := recordsRead(ctx, client, job)
		return err == nil && n == total
	})

	// Before the drain: windows 0 to 3 are committed, each once; 4 to 7
	// are open, the watermark held in window 4 by partition 3.
	open := 0
	before := committedWindows(t, c, "sums", 2)
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
	if open != 12 {
		t.Errorf("%d key-windows open at the drain, want 12", open)
	}
	t.Logf("draining job %s after %v: %d records read, %d of %d key-windows committed", job, time.Since(started).Round(time.Millisecond), total, len(before), len(want))

	var out, errOut bytes.Buffer
	if code := runMain(&out, &errOut, "drain", "--endpoint="+endpoint, job); code != 0 {
		t.Fatalf("weir drain %s: exit %d: %s", job, code, errOut.String())
	}
	if !strings.Contains(out.String(), "DRAINING") {
		t.Errorf("weir drain printed %q, want the job DRAINING", out.String())
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("drained job: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the drained job did not end")
	}
	t.Logf("the job ended %v after it started", time.Since(started).Round(time.Millisecond))
	st, err := client.GetState(context.Background(), &jobpb.GetJobStateRequest{JobId: job})
	if err != nil || st.GetState() != jobpb.JobState_DRAINED {
		t.Fatalf("job state %v (%v), want DRAINED", st.GetState(), err)
	}

	got := committedWindows(t, c, "sums", 2)
	for _, w := range slices.SortedFunc(maps.Keys(want), func(a, b drainWindow) int {
		return cmp.Or(cmp.Compare(a.start, b.start), strings.Compare(a.key, b.key))
	}) {
		if g := got[w]; len(g) != 1 || g[0] != want[w] {
			t.Errorf("window %s at +%v: read_committed sees %v, want %v once", w.key, time.UnixMilli(w.start).Sub(base), g, want[w])
		}
	}
	for w, g := range got {
		if _, ok := want[w]; !ok {
			t.Errorf("unexpected output %s at %d: %v", w.key, w.start, g)
		}
	}
	if len(want) != 24 {
		t.Fatalf("the input has %d key-windows, want 3 keys in 8 windows", len(want))
	}
}
