package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/twophase/twophasetest"
	"github.com/weir-runner/weir/wire"
)

const txnPartitions = 2

// txnEnv is one test's sink topic, of txnPartitions partitions, and the
// transactional id of its sink subtask, on one broker.
type txnEnv struct {
	b     *kafkatest.Broker
	topic string
	txnID string
}

func newTxnEnv(t *testing.T, b *kafkatest.Broker) *txnEnv {
	return &txnEnv{b: b, topic: b.Topic(t, "out", txnPartitions), txnID: b.Name(t, "sink")}
}

// txnDriver is an exactly-once sink subtask: the driver and its sink.
type txnDriver struct {
	*twophase.Driver
	*TxnSink
}

// sink makes an exactly-once sink subtask over store, as the runner does.
// Sinks of one env share the transactional id, as the runs of one job do.
func (e *txnEnv) sink(t *testing.T, store *state.Store) txnDriver {
	t.Helper()
	w, err := NewTxnWriter(&kafkaio.WriteConfig{BootstrapServers: e.b.Addrs, Topic: e.topic, Semantic: kafkaio.ExactlyOnce},
		TxnOptions{Name: "sink[0]", TransactionalID: e.txnID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return driveTxn(w, store, kvBytesCodec(t))
}

// driveTxn makes the subtask of a TxnSink over w and store.
func driveTxn(w *TxnWriter, store *state.Store, in *wire.Codec) txnDriver {
	s := &TxnSink{Writer: w, In: in}
	return txnDriver{&twophase.Driver{Sink: s, Pending: twophase.NewPending(store, "s/0", "sink[0]"),
		Name: fmt.Sprintf("kafka sink sink[0]: topic %q", w.topic)}, s}
}

// elems encodes records named by vals as the sink receives them.
func elems(vals ...string) [][]byte {
	var recs []Record
	for _, v := range vals {
		recs = append(recs, Record{Key: []byte("k" + v), Value: []byte(v)})
	}
	return encodeRecords(recs)
}

// written returns how many records (committed, aborted or open) the topic
// holds, control records included: Kafka's end offsets.
func (e *txnEnv) written(t *testing.T) int64 {
	t.Helper()
	ends, err := e.b.Admin(t).ListEndOffsets(context.Background(), e.topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

var sentinels atomic.Int64

// committed returns the values a read_committed consumer sees in the
// topic, in partition order. It first appends a sentinel to every
// partition, outside any transaction, and reads until it has seen them
// all: so it returns everything committed before the call, without a
// timeout, and hangs (failing the test) if a transaction is left open.
func (e *txnEnv) committed(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	sentinel := fmt.Sprint("sentinel-", sentinels.Add(1))
	p, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for part := range int32(txnPartitions) {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: e.topic, Partition: part, Value: []byte(sentinel)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addrs...), kgo.ConsumeTopics(e.topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	for seen := 0; seen < txnPartitions; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			switch {
			case v == sentinel:
				seen++
			case !strings.HasPrefix(v, "sentinel-"):
				if string(r.Key) != "k"+v {
					t.Errorf("record %q has key %q", v, r.Key)
				}
				out = append(out, v)
			}
		})
	}
	slices.Sort(out)
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (e *txnEnv) want(t *testing.T, vals ...string) {
	t.Helper()
	got := e.committed(t)
	if vals == nil {
		vals = []string{}
	}
	if got == nil {
		got = []string{}
	}
	if !slices.Equal(got, vals) {
		t.Errorf("read_committed sees %q, want %q (each once)", got, vals)
	}
}

// TestTxnSinkCommitsOnCheckpointComplete: records reach the topic only when
// a checkpoint covering them completes, each exactly once, and leave the
// store then.
func TestTxnSinkCommitsOnCheckpointComplete(t *testing.T) {
	kafkatest.Each(t, testTxnSinkCommitsOnCheckpointComplete)
}

func testTxnSinkCommitsOnCheckpointComplete(t *testing.T, c *kafkatest.Broker) {
	e := newTxnEnv(t, c)
	ctx := context.Background()
	store := twophasetest.Store(t)
	s := e.sink(t, store)
	must(t, s.Process(ctx, 0, elems("a", "b", "c")))
	must(t, s.Barrier(ctx, 1))
	must(t, s.Process(ctx, 0, elems("d"))) // after the barrier: checkpoint 2's
	if n := e.written(t); n != 0 {
		t.Fatalf("%d records in Kafka before any checkpoint completed, want 0", n)
	}
	must(t, s.CheckpointComplete(ctx, 1))
	e.want(t, "a", "b", "c")
	must(t, s.Barrier(ctx, 2))
	must(t, s.Process(ctx, 0, elems("e")))
	must(t, s.CheckpointComplete(ctx, 2))
	must(t, s.CheckpointComplete(ctx, 2)) // a repeated notification writes nothing
	e.want(t, "a", "b", "c", "d")
	n := 0
	must(t, s.Pending.Read(0, 100, func(executor.BarrierID, []byte) error { n++; return nil }))
	if n != 1 {
		t.Errorf("%d records left in the store, want 1 (the open epoch)", n)
	}
	must(t, s.Finish(ctx)) // the end of input commits the open epoch
	e.want(t, "a", "b", "c", "d", "e")
	if s.TxnSink.Committed != 5 {
		t.Errorf("Committed = %d, want 5", s.TxnSink.Committed)
	}
}

// TestTxnSinkCommitsBackToBack: checkpoints that complete one after
// another each commit at the first attempt, with no warning. Before each
// commit the sink reads its marker, which a real broker reports unstable
// until it has finished the previous commit; that is waited out, not
// retried as a failure.
func TestTxnSinkCommitsBackToBack(t *testing.T) { kafkatest.Each(t, testTxnSinkCommitsBackToBack) }

func testTxnSinkCommitsBackToBack(t *testing.T, c *kafkatest.Broker) {
	e := newTxnEnv(t, c)
	ctx := context.Background()
	s := e.sink(t, twophasetest.Store(t))
	s.OnRetry = func(err error) { t.Errorf("retried %v", err) }
	var vals []string
	for id := range executor.BarrierID(20) {
		v := fmt.Sprint(100 + id) // sorted as numbers and as strings
		vals = append(vals, v)
		must(t, s.Process(ctx, 0, elems(v)))
		must(t, s.Barrier(ctx, id+1))
		must(t, s.CheckpointComplete(ctx, id+1))
	}
	e.want(t, vals...)
}

// TestTxnSinkMissingTopic: a commit to a topic that does not exist (the
// brokers do not create topics on first use) is reported, naming the
// sink and topic, and retried until the topic is created; then its
// records are committed once.
func TestTxnSinkMissingTopic(t *testing.T) { kafkatest.Each(t, testTxnSinkMissingTopic) }

func testTxnSinkMissingTopic(t *testing.T, c *kafkatest.Broker) {
	e := &txnEnv{b: c, topic: c.Name(t, "later"), txnID: c.Name(t, "sink")}
	ctx := context.Background()
	w, err := NewTxnWriter(&kafkaio.WriteConfig{BootstrapServers: c.Addrs, Topic: e.topic, Semantic: kafkaio.ExactlyOnce},
		TxnOptions{Name: "sink[0]", TransactionalID: e.txnID, ClientOpts: []kgo.Opt{kgo.UnknownTopicRetries(1)}})
	must(t, err)
	t.Cleanup(w.Close)
	s := driveTxn(w, twophasetest.Store(t), kvBytesCodec(t))
	errs := make(chan error, 100)
	s.OnRetry = func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	must(t, s.Process(ctx, 0, elems("a", "b")))
	must(t, s.Barrier(ctx, 1))
	done := make(chan error, 1)
	go func() { done <- s.CheckpointComplete(ctx, 1) }()
	err = <-errs
	if want := fmt.Sprintf("kafka sink sink[0]: topic %q: commit of checkpoint 1", e.topic); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	t.Logf("retried: %v", err)
	c.CreateTopic(t, e.topic, txnPartitions)
	must(t, <-done)
	e.want(t, "a", "b")
}

// TestTxnSinkCrashBeforeCommit: the job crashes after checkpoint 1's
// pre-commit (its snapshot holds the records) but before the commit, with
// a transaction of the crashed sink left open in Kafka. A sink over the
// restored store commits them exactly once, and the open transaction is
// aborted, not committed.
func TestTxnSinkCrashBeforeCommit(t *testing.T) { kafkatest.Each(t, testTxnSinkCrashBeforeCommit) }

func testTxnSinkCrashBeforeCommit(t *testing.T, c *kafkatest.Broker) {
	e := newTxnEnv(t, c)
	ctx := context.Background()
	store := twophasetest.Store(t)
	s := e.sink(t, store)
	must(t, s.Process(ctx, 0, elems("a", "b")))
	must(t, s.Barrier(ctx, 1))
	restore := twophasetest.Checkpoint(t, store, "s/0")
	must(t, s.Process(ctx, 0, elems("lost"))) // after the checkpoint: replayed by the sources
	// The crashed process was writing a transaction it never ended.
	zombie, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs...), kgo.TransactionalID(e.txnID), kgo.DefaultProduceTopic(e.topic))
	must(t, err)
	t.Cleanup(zombie.Close)
	must(t, zombie.BeginTransaction())
	must(t, zombie.ProduceSync(ctx, &kgo.Record{Key: []byte("kzombie"), Value: []byte("zombie")}).FirstErr())

	r := e.sink(t, restore())
	must(t, r.Process(ctx, 0, elems("c"))) // the first call recovers
	e.want(t, "a", "b")
	must(t, r.Barrier(ctx, 2))
	must(t, r.CheckpointComplete(ctx, 2))
	e.want(t, "a", "b", "c")
}

// TestTxnSinkCrashAfterCommitBeforeDelete: checkpoint 1 completes and is
// committed, and the job crashes before the store drops the records. The
// restored store (checkpoint 1's snapshot) still holds them; the marker
// keeps them from being written twice.
func TestTxnSinkCrashAfterCommitBeforeDelete(t *testing.T) {
	kafkatest.Each(t, testTxnSinkCrashAfterCommitBeforeDelete)
}

func testTxnSinkCrashAfterCommitBeforeDelete(t *testing.T, c *kafkatest.Broker) {
	e := newTxnEnv(t, c)
	ctx := context.Background()
	store := twophasetest.Store(t)
	s := e.sink(t, store)
	must(t, s.Process(ctx, 0, elems("a", "b")))
	must(t, s.Barrier(ctx, 1))
	restore := twophasetest.Checkpoint(t, store, "s/0")
	must(t, s.CheckpointComplete(ctx, 1))
	s.Writer.Close()
	e.want(t, "a", "b")

	r := e.sink(t, restore())
	must(t, r.Process(ctx, 0, elems("c")))
	must(t, r.Barrier(ctx, 2))
	must(t, r.CheckpointComplete(ctx, 2))
	e.want(t, "a", "b", "c")
	if r.TxnSink.Committed != 1 {
		t.Errorf("the restored sink committed %d records, want 1", r.TxnSink.Committed)
	}
}

// TestTxnSinkMarkerOfAnotherRun: a job started afresh (not restored)
// numbers its checkpoints from 1 again; the marker an earlier run left at
// a higher checkpoint must not hide its records.
func TestTxnSinkMarkerOfAnotherRun(t *testing.T) { kafkatest.Each(t, testTxnSinkMarkerOfAnotherRun) }

func testTxnSinkMarkerOfAnotherRun(t *testing.T, c *kafkatest.Broker) {
	e := newTxnEnv(t, c)
	ctx := context.Background()
	s := e.sink(t, twophasetest.Store(t))
	must(t, s.Process(ctx, 0, elems("a")))
	must(t, s.Barrier(ctx, 5))
	must(t, s.CheckpointComplete(ctx, 5))
	s.Writer.Close()

	r := e.sink(t, twophasetest.Store(t))
	must(t, r.Process(ctx, 0, elems("b")))
	must(t, r.Barrier(ctx, 1))
	must(t, r.CheckpointComplete(ctx, 1))
	e.want(t, "a", "b")
}

// TestTxnSinkRetriesBrokerError: a commit the broker refuses with a
// retriable error is reported and retried until it succeeds, once.
func TestTxnSinkRetriesBrokerError(t *testing.T) {
	c := kafkatest.Fake(t) // steers the broker
	e := newTxnEnv(t, c)
	ctx := context.Background()
	s := e.sink(t, twophasetest.Store(t))
	var retried []error
	s.OnRetry = func(err error) { retried = append(retried, err) }
	must(t, s.Process(ctx, 0, elems("a", "b")))
	must(t, s.Barrier(ctx, 1))
	// franz-go retries coordinator errors itself; this one reaches the sink.
	c.Fake.ControlKey(int16(kmsg.AddOffsetsToTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.ConcurrentTransactions.Code
		return resp, nil, true
	})
	must(t, s.CheckpointComplete(ctx, 1))
	if len(retried) != 1 || !errors.Is(retried[0], kerr.ConcurrentTransactions) ||
		!strings.Contains(retried[0].Error(), fmt.Sprintf("kafka sink sink[0]: topic %q: commit of checkpoint 1", e.topic)) {
		t.Errorf("retried errors %v, want one naming the sink, topic and checkpoint", retried)
	}
	e.want(t, "a", "b")
}

// TestTxnSinkFencedFailsLoudly: a commit that cannot succeed (another
// producer took the transactional id) fails at once.
func TestTxnSinkFencedFailsLoudly(t *testing.T) {
	c := kafkatest.Fake(t) // steers the broker
	e := newTxnEnv(t, c)
	ctx := context.Background()
	s := e.sink(t, twophasetest.Store(t))
	s.OnRetry = func(err error) { t.Errorf("retried %v", err) }
	must(t, s.Process(ctx, 0, elems("a")))
	must(t, s.Barrier(ctx, 1))
	c.Fake.ControlKey(int16(kmsg.AddOffsetsToTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.ProducerFenced.Code
		return resp, nil, true
	})
	err := s.CheckpointComplete(ctx, 1)
	if !twophase.IsPermanent(err) || !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("CheckpointComplete = %v, want a permanent ProducerFenced", err)
	}
	e.want(t)
}

// TestTxnSinkFencedByAnotherWriter: a second writer with the same
// transactional id (a second job writing as this one) fences the first,
// whose next commit fails at once, permanently, writing nothing, and
// does not fence the second in turn.
func TestTxnSinkFencedByAnotherWriter(t *testing.T) {
	kafkatest.Each(t, testTxnSinkFencedByAnotherWriter)
}

func testTxnSinkFencedByAnotherWriter(t *testing.T, c *kafkatest.Broker) {
	e := newTxnEnv(t, c)
	ctx := context.Background()
	first := e.sink(t, twophasetest.Store(t))
	var retried []error
	first.OnRetry = func(err error) { retried = append(retried, err) }
	must(t, first.Process(ctx, 0, elems("a")))
	must(t, first.Barrier(ctx, 1))
	must(t, first.CheckpointComplete(ctx, 1))

	second := e.sink(t, twophasetest.Store(t))
	must(t, second.Process(ctx, 0, elems("b")))
	must(t, second.Barrier(ctx, 1))
	must(t, second.CheckpointComplete(ctx, 1)) // inits the producer id
	must(t, first.Process(ctx, 0, elems("lost")))
	must(t, first.Barrier(ctx, 2))
	err := first.CheckpointComplete(ctx, 2)
	if !twophase.IsPermanent(err) || !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("the fenced sink's commit = %v, want a permanent ProducerFenced (retried %v)", err, retried)
	}
	must(t, second.Process(ctx, 0, elems("c")))
	must(t, second.Barrier(ctx, 2))
	must(t, second.CheckpointComplete(ctx, 2))
	e.want(t, "a", "b", "c")
}

// TestTxnWriterTransactionTimedOut: a commit that outlives its
// transaction timeout, which the broker aborts (and, with Kafka's
// transaction.version 2, bumps the producer epoch for), fails, and is
// retried; the next commit of the same writer succeeds. The timed-out
// records are not committed. Kafka lets the producer whose transaction
// it timed out abort with its own producer id and go on; kfake answers
// that abort with PRODUCER_FENCED, so the writer, which takes
// ProducerFenced for another writer holding its id, would stop.
func TestTxnWriterTransactionTimedOut(t *testing.T) {
	kafkatest.Each(t, testTxnWriterTransactionTimedOut)
}

func testTxnWriterTransactionTimedOut(t *testing.T, c *kafkatest.Broker) {
	if !c.Real() {
		t.Skip("kfake fences the producer of a transaction it timed out; Kafka does not")
	}
	e := newTxnEnv(t, c)
	ctx := context.Background()
	w, err := NewTxnWriter(&kafkaio.WriteConfig{BootstrapServers: c.Addrs, Topic: e.topic, Semantic: kafkaio.ExactlyOnce},
		TxnOptions{Name: "sink[0]", TransactionalID: e.txnID, ClientOpts: []kgo.Opt{kgo.TransactionTimeout(time.Second)}})
	must(t, err)
	t.Cleanup(w.Close)
	adm := c.Admin(t)
	_, err = w.Commit(ctx, Markers{}.With("run", 1), func(produce func(key, value []byte)) error {
		produce([]byte("klate"), []byte("late"))
		must(t, w.client.Flush(ctx)) // the timeout runs from the first record
		for {
			d, err := adm.DescribeTransactions(ctx, e.txnID)
			must(t, err)
			if st := d[e.txnID].State; st != "Ongoing" {
				t.Logf("the transaction is %s", st)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		produce([]byte("klater"), []byte("later"))
		return nil
	})
	if err == nil || twophase.IsPermanent(err) {
		t.Fatalf("a commit past its transaction timeout = %v, want an error to retry", err)
	}
	t.Logf("the timed-out commit: %v", err)
	n, err := w.Commit(ctx, Markers{}.With("run", 1), func(produce func(key, value []byte)) error {
		produce([]byte("kagain"), []byte("again"))
		return nil
	})
	if err != nil || n != 1 {
		t.Fatalf("the commit after the timeout = %d, %v; want 1 record", n, err)
	}
	e.want(t, "again")
}

func TestMarkers(t *testing.T) {
	var ms Markers
	ms = ms.With("ab12", 7).With("cd34", 3).With("ab12", 9)
	if got := ms.String(); got != "weir exactly-once sink v2: cd34=3 ab12=9" {
		t.Errorf("String() = %q", got)
	}
	back := ParseMarkers(ms.String())
	if back.Of("ab12") != 9 || back.Of("cd34") != 3 || back.Of("ef56") != 0 || back.newest() != 9 {
		t.Errorf("ParseMarkers(%q) = %v", ms.String(), back)
	}
	for _, meta := range []string{"", "weir exactly-once sink: run ab12 checkpoint 7", "weir exactly-once sink v2: ab12=x =3 cd34"} {
		if got := ParseMarkers(meta); got.Of("ab12") != 0 || got.Of("cd34") != 0 {
			t.Errorf("ParseMarkers(%q) = %v, want no marker", meta, got)
		}
	}
	for i := range 2 * maxMarkers {
		ms = ms.With(fmt.Sprintf("%016x", i), executor.BarrierID(1<<40+i))
	}
	if len(ms) != maxMarkers || ms.Of("ab12") != 0 || ms.Of(fmt.Sprintf("%016x", 2*maxMarkers-1)) != 1<<40+2*maxMarkers-1 {
		t.Errorf("after %d runs: %d markers kept, oldest %v", 2*maxMarkers, len(ms), ms[0])
	}
	if n := len(ms.String()); n > 4096 {
		t.Errorf("metadata of %d runs is %d bytes, over Kafka's default offset.metadata.max.bytes", maxMarkers, n)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err       error
		permanent bool
	}{
		{kerr.ProducerFenced, true},
		{fmt.Errorf("commit: %w", kerr.TopicAuthorizationFailed), true},
		{kerr.CoordinatorNotAvailable, false},
		{kerr.ConcurrentTransactions, false},
		{errors.New("dial tcp: connection refused"), false},
	} {
		if got := twophase.IsPermanent(classify(tc.err)); got != tc.permanent {
			t.Errorf("classify(%v) permanent = %v, want %v", tc.err, got, tc.permanent)
		}
	}
}
