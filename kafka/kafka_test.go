package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafkaio"
)

// fakeClock is processing time that moves only when a test says so.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newCluster starts an in-process kfake broker with the given topics of
// partitions partitions each, for the tests that run on kfake only.
func newCluster(t *testing.T, partitions int32, topics ...string) *kafkatest.Broker {
	t.Helper()
	var opts []kfake.Opt
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(partitions, topics...))
	}
	return kafkatest.Fake(t, opts...)
}

// rec is a record to produce to one partition, at event time ts (ms).
type rec struct {
	partition int32
	key, val  string
	ts        int64
}

func produce(t *testing.T, c *kafkatest.Broker, topic string, recs ...rec) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var krs []*kgo.Record
	for _, r := range recs {
		krs = append(krs, &kgo.Record{Topic: topic, Partition: r.partition, Key: []byte(r.key), Value: []byte(r.val),
			Timestamp: time.UnixMilli(r.ts)})
	}
	if err := cl.ProduceSync(context.Background(), krs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// readAll polls r until it has n records or is done, at most polls times.
func readAll(t *testing.T, r *Reader, n, polls int) []Record {
	t.Helper()
	var out []Record
	for i := 0; i < polls && len(out) < n && !r.Done(); i++ {
		recs, err := r.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range recs {
			x.Key, x.Value = append([]byte(nil), x.Key...), append([]byte(nil), x.Value...)
			out = append(out, x)
		}
	}
	return out
}

func values(recs []Record) map[string]bool {
	out := map[string]bool{}
	for _, r := range recs {
		out[string(r.Value)] = true
	}
	return out
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{
		{-1, 100 * time.Millisecond}, {0, 100 * time.Millisecond}, {1, 200 * time.Millisecond},
		{6, 6400 * time.Millisecond}, {7, 10 * time.Second}, {100, 10 * time.Second},
	} {
		if got := backoff(tc.attempt); got != tc.want {
			t.Errorf("backoff(%d) = %v, want %v", tc.attempt, got, tc.want)
		}
	}
}

// TestReadStart reads a 3-partition topic from each start position.
func TestReadStart(t *testing.T) { kafkatest.Each(t, testReadStart) }

func testReadStart(t *testing.T, c *kafkatest.Broker) {
	in, g, never := c.Topic(t, "in", 3), c.Name(t, "g"), c.Name(t, "never-committed")
	var recs []rec
	for i := range 9 {
		recs = append(recs, rec{partition: int32(i % 3), val: fmt.Sprint("v", i), ts: int64(1000 * (i + 1))})
	}
	produce(t, c, in, recs...)
	// group g committed offset 2 on partition 0 only.
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	commit(t, adm, g, in, 0, 2)

	for _, tc := range []struct {
		name   string
		cfg    kafkaio.ReadConfig
		before []rec // produced after the reader opens
		want   []string
	}{
		{"earliest", kafkaio.ReadConfig{Start: kafkaio.StartEarliest}, nil,
			[]string{"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8"}},
		// v5 (6000 ms) on partition 2 and v6 (7000 ms) on partition 0 are the
		// first at or after 5500 ms in theirs; partition 1's v7 (8000 ms) too.
		{"time", kafkaio.ReadConfig{Start: kafkaio.StartTime, StartTimeMillis: 5500}, nil,
			[]string{"v5", "v6", "v7", "v8"}},
		// partition 0 from its commit (offset 2: v6), the others from the
		// start, as auto.offset.reset says.
		{"committed", kafkaio.ReadConfig{Start: kafkaio.StartCommitted,
			ConsumerConfig: map[string]string{"group.id": g, "auto.offset.reset": "earliest"}}, nil,
			[]string{"v1", "v2", "v4", "v5", "v6", "v7", "v8"}},
		// a group that never committed (kfake answers GROUP_ID_NOT_FOUND,
		// Kafka an empty answer)
		// starts every partition where auto.offset.reset says
		{"committed, new group", kafkaio.ReadConfig{Start: kafkaio.StartCommitted,
			ConsumerConfig: map[string]string{"group.id": never, "auto.offset.reset": "earliest"}}, nil,
			[]string{"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8"}},
		// last: it adds a record the others would read
		{"latest", kafkaio.ReadConfig{Start: kafkaio.StartLatest}, []rec{{partition: 1, val: "new", ts: 99000}},
			[]string{"new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.BootstrapServers, cfg.Topics = c.Addrs, []string{in}
			r, err := Open(context.Background(), &cfg, ReaderOptions{Name: "read-" + tc.name, PollWait: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			produce(t, c, in, tc.before...)
			got := values(readAll(t, r, len(tc.want), 100))
			// One more poll: nothing beyond what is expected.
			for _, x := range readAll(t, r, 1, 3) {
				got[string(x.Value)] = true
			}
			if fmt.Sprint(sortedKeys(got)) != fmt.Sprint(tc.want) {
				t.Errorf("read %v, want %v", sortedKeys(got), tc.want)
			}
		})
	}
}

// TestReadMaxRecords ends a read after max_records, at +inf.
func TestReadMaxRecords(t *testing.T) { kafkatest.Each(t, testReadMaxRecords) }

func testReadMaxRecords(t *testing.T, c *kafkatest.Broker) {
	in := c.Topic(t, "in", 3)
	for p := range int32(3) {
		produce(t, c, in, rec{partition: p, val: "a", ts: 1000}, rec{partition: p, val: "b", ts: 2000})
	}
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{in}, MaxRecords: 4}
	r, err := Open(context.Background(), &cfg, ReaderOptions{Name: "bounded", PollWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := readAll(t, r, 100, 100)
	if len(got) != 4 || !r.Done() {
		t.Fatalf("read %d records, done %v; want 4, done", len(got), r.Done())
	}
	if wm, _ := r.Watermark(); wm != maxTime {
		t.Errorf("watermark %v after the end, want +inf", wm)
	}
	if s := r.Stats(); s.Records != 4 || !s.Done {
		t.Errorf("stats %+v", s)
	}
}

// TestReadMaxReadTime ends a read after max_read_time on the fake clock.
func TestReadMaxReadTime(t *testing.T) { kafkatest.Each(t, testReadMaxReadTime) }

func testReadMaxReadTime(t *testing.T, c *kafkatest.Broker) {
	in := c.Topic(t, "in", 1)
	clock := newFakeClock()
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{in}, MaxReadTimeMillis: 60_000}
	r, err := Open(context.Background(), &cfg, ReaderOptions{Name: "timed", Clock: clock, PollWait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	readAll(t, r, 1, 2)
	if r.Done() {
		t.Fatal("done before its read time")
	}
	clock.Advance(time.Minute)
	readAll(t, r, 1, 1)
	if !r.Done() {
		t.Fatal("not done after its read time")
	}
}

// TestReadToTransactionEnd: a partition whose last records were written
// in a transaction, read to its end, has no lag and no backlog, and its
// position is past the transaction's marker, which takes an offset of its
// own. Records of an aborted transaction are not read with
// read_committed.
func TestReadToTransactionEnd(t *testing.T) { kafkatest.Each(t, testReadToTransactionEnd) }

func testReadToTransactionEnd(t *testing.T, c *kafkatest.Broker) {
	in := c.Topic(t, "in", 1)
	ctx := context.Background()
	p := c.Client(t, kgo.TransactionalID(c.Name(t, "producer")), kgo.DefaultProduceTopic(in))
	for _, end := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort, kgo.TryCommit} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(end))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := p.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{in},
		ConsumerConfig: map[string]string{"isolation.level": "read_committed"}}
	r, err := Open(ctx, &cfg, ReaderOptions{Name: "src", PollWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := readAll(t, r, 2, 100)
	readAll(t, r, 1, 3) // the marker may come in a later fetch
	if len(got) != 2 {
		t.Fatalf("read %d records, want the 2 committed", len(got))
	}
	// 3 records and 3 markers.
	if s := r.Stats().Partitions[0]; s.Next != 6 || s.Lag != 0 {
		t.Errorf("read to the end: next %d, lag %d; want 6 and 0", s.Next, s.Lag)
	}
	if st := r.reportStates(); st[0].Backlog {
		t.Error("a partition read to its end has a backlog")
	}
}

// TestReadErrorsRetried: a missing topic and unreachable brokers are
// reported, naming the source and topic, and retried until they are fixed
// or the job ends.
func TestReadErrorsRetried(t *testing.T) {
	// A missing topic, then created.
	kafkatest.Each(t, func(t *testing.T, c *kafkatest.Broker) {
		later := c.Name(t, "later")
		errs := make(chan error, 100)
		cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{later}}
		type opened struct {
			r   *Reader
			err error
		}
		done := make(chan opened, 1)
		go func() {
			r, err := Open(context.Background(), &cfg, ReaderOptions{Name: "src", PollWait: 20 * time.Millisecond,
				OnError: func(err error) {
					select {
					case errs <- err:
					default:
					}
				}})
			done <- opened{r, err}
		}()
		err := <-errs
		if want := fmt.Sprintf("kafka source src: topic %q", later); !contains(err.Error(), want) {
			t.Fatalf("error %q does not name %q", err, want)
		}
		createTopic(t, c, later, 2)
		produce(t, c, later, rec{partition: 1, val: "x", ts: 5})
		o := <-done
		if o.err != nil {
			t.Fatal(o.err)
		}
		defer o.r.Close()
		if got := readAll(t, o.r, 1, 100); len(got) != 1 || string(got[0].Value) != "x" {
			t.Fatalf("read %v", got)
		}
	})
	t.Run("unreachable brokers", func(t *testing.T) {
		c := newCluster(t, 1)
		addr := c.Addrs
		c.Fake.Close() // nothing listens there now
		errs := make(chan error, 100)
		ctx, cancel := context.WithCancel(context.Background())
		cfg := kafkaio.ReadConfig{BootstrapServers: addr, Topics: []string{"in"}}
		done := make(chan error, 1)
		go func() {
			_, err := Open(ctx, &cfg, ReaderOptions{Name: "src", ClientOpts: []kgo.Opt{kgo.RetryTimeout(100 * time.Millisecond)},
				OnError: func(err error) {
					select {
					case errs <- err:
					default:
					}
				}})
			done <- err
		}()
		err := <-errs
		if want := fmt.Sprintf("kafka source src: listing topics [in] at %v", addr); !contains(err.Error(), want) {
			t.Fatalf("error %q does not name %q", err, want)
		}
		cancel()
		if err := <-done; err == nil {
			t.Fatal("Open returned no error after its context ended")
		}
	})
}

func TestWriter(t *testing.T) { kafkatest.Each(t, testWriter) }

func testWriter(t *testing.T, c *kafkatest.Broker) {
	out := c.Topic(t, "out", 3)
	w, err := NewWriter(&kafkaio.WriteConfig{BootstrapServers: c.Addrs, Topic: out}, WriterOptions{Name: "sink"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 100 {
		w.Write(context.Background(), []byte(fmt.Sprint("k", i%7)), []byte(fmt.Sprint(i)))
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.Written() != 100 {
		t.Errorf("written %d, want 100", w.Written())
	}
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{out}, MaxRecords: 100}
	r, err := Open(context.Background(), &cfg, ReaderOptions{Name: "check", PollWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := values(readAll(t, r, 100, 200)); len(got) != 100 {
		t.Errorf("read back %d distinct records, want 100", len(got))
	}
}

// TestWriterMissingTopic: records for a topic that does not exist yet are
// reported and produced again until it does.
func TestWriterMissingTopic(t *testing.T) { kafkatest.Each(t, testWriterMissingTopic) }

func testWriterMissingTopic(t *testing.T, c *kafkatest.Broker) {
	later := c.Name(t, "later")
	errs := make(chan error, 100)
	w, err := NewWriter(&kafkaio.WriteConfig{BootstrapServers: c.Addrs, Topic: later}, WriterOptions{Name: "sink",
		ClientOpts: []kgo.Opt{kgo.UnknownTopicRetries(1)},
		OnError: func(err error) {
			select {
			case errs <- err:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 10 {
		w.Write(context.Background(), nil, []byte(fmt.Sprint(i)))
	}
	done := make(chan error, 1)
	go func() { done <- w.Flush(context.Background()) }()
	err = <-errs
	if want := fmt.Sprintf("kafka sink sink: topic %q: 10 records not written", later); !contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	createTopic(t, c, later, 1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w.Written() != 10 {
		t.Errorf("written %d, want 10", w.Written())
	}
}

// Like Java's producer, the writer lets a broker that allows it create the
// topic it writes to, unless the producer config says not to.
func TestWriterAutoCreatesTopic(t *testing.T) {
	// kfake only: weir's test broker, like production clusters, does not
	// create topics on first use.
	c := kafkatest.Fake(t, kfake.AllowAutoTopicCreation())
	w, err := NewWriter(&kafkaio.WriteConfig{BootstrapServers: c.Addrs, Topic: "fresh"}, WriterOptions{Name: "sink"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 5 {
		w.Write(context.Background(), nil, []byte(fmt.Sprint(i)))
	}
	if err := w.Flush(context.Background()); err != nil || w.Written() != 5 {
		t.Fatalf("flush: %v, written %d; want 5 records in the new topic", err, w.Written())
	}
	if _, err := NewWriter(&kafkaio.WriteConfig{BootstrapServers: c.Addrs, Topic: "x",
		ProducerConfig: map[string]string{"allow.auto.create.topics": "maybe"}}, WriterOptions{Name: "sink"}); err == nil ||
		!contains(err.Error(), "allow.auto.create.topics") {
		t.Errorf("a bad allow.auto.create.topics gave %v", err)
	}
}
