package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/twophase/twophasetest"
)

const txnPartitions = 2

// txnDriver is an exactly-once sink subtask: the driver and its sink.
type txnDriver struct {
	*twophase.Driver
	*TxnSink
}

// txnSink makes an exactly-once sink subtask over store, as the runner
// does, with transactional id "sink-0".
func txnSink(t *testing.T, c *kfake.Cluster, store *state.Store) txnDriver {
	t.Helper()
	w, err := NewTxnWriter(&kafkaio.WriteConfig{BootstrapServers: c.ListenAddrs(), Topic: "out", Semantic: kafkaio.ExactlyOnce},
		TxnOptions{Name: "sink[0]", TransactionalID: "sink-0"})
	if err != nil {
		t.Fatal(err)
	}
	s := &TxnSink{Writer: w, In: kvBytesCodec(t)}
	return txnDriver{&twophase.Driver{Sink: s, Pending: twophase.NewPending(store, "s/0", "sink[0]"),
		Name: `kafka sink sink[0]: topic "out"`}, s}
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
func written(t *testing.T, c *kfake.Cluster) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), "out")
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
func committed(t *testing.T, c *kfake.Cluster) []string {
	t.Helper()
	ctx := context.Background()
	sentinel := fmt.Sprint("sentinel-", sentinels.Add(1))
	p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for part := range int32(txnPartitions) {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "out", Partition: part, Value: []byte(sentinel)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("out"),
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

func want(t *testing.T, c *kfake.Cluster, vals ...string) {
	t.Helper()
	got := committed(t, c)
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
	c := newCluster(t, txnPartitions, "out")
	ctx := context.Background()
	store := twophasetest.Store(t)
	s := txnSink(t, c, store)
	must(t, s.Process(ctx, 0, elems("a", "b", "c")))
	must(t, s.Barrier(ctx, 1))
	must(t, s.Process(ctx, 0, elems("d"))) // after the barrier: checkpoint 2's
	if n := written(t, c); n != 0 {
		t.Fatalf("%d records in Kafka before any checkpoint completed, want 0", n)
	}
	must(t, s.CheckpointComplete(ctx, 1))
	want(t, c, "a", "b", "c")
	must(t, s.Barrier(ctx, 2))
	must(t, s.Process(ctx, 0, elems("e")))
	must(t, s.CheckpointComplete(ctx, 2))
	must(t, s.CheckpointComplete(ctx, 2)) // a repeated notification writes nothing
	want(t, c, "a", "b", "c", "d")
	n := 0
	must(t, s.Pending.Read(0, 100, func(executor.BarrierID, []byte) error { n++; return nil }))
	if n != 1 {
		t.Errorf("%d records left in the store, want 1 (the open epoch)", n)
	}
	must(t, s.Finish(ctx)) // the end of input commits the open epoch
	want(t, c, "a", "b", "c", "d", "e")
	if s.TxnSink.Committed != 5 {
		t.Errorf("Committed = %d, want 5", s.TxnSink.Committed)
	}
}

// TestTxnSinkCrashBeforeCommit: the job crashes after checkpoint 1's
// pre-commit (its snapshot holds the records) but before the commit, with
// a transaction of the crashed sink left open in Kafka. A sink over the
// restored store commits them exactly once, and the open transaction is
// aborted, not committed.
func TestTxnSinkCrashBeforeCommit(t *testing.T) {
	c := newCluster(t, txnPartitions, "out")
	ctx := context.Background()
	store := twophasetest.Store(t)
	s := txnSink(t, c, store)
	must(t, s.Process(ctx, 0, elems("a", "b")))
	must(t, s.Barrier(ctx, 1))
	restore := twophasetest.Checkpoint(t, store, "s/0")
	must(t, s.Process(ctx, 0, elems("lost"))) // after the checkpoint: replayed by the sources
	// The crashed process was writing a transaction it never ended.
	zombie, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("sink-0"), kgo.DefaultProduceTopic("out"))
	must(t, err)
	t.Cleanup(zombie.Close)
	must(t, zombie.BeginTransaction())
	must(t, zombie.ProduceSync(ctx, &kgo.Record{Key: []byte("kzombie"), Value: []byte("zombie")}).FirstErr())

	r := txnSink(t, c, restore())
	must(t, r.Process(ctx, 0, elems("c"))) // the first call recovers
	want(t, c, "a", "b")
	must(t, r.Barrier(ctx, 2))
	must(t, r.CheckpointComplete(ctx, 2))
	want(t, c, "a", "b", "c")
}

// TestTxnSinkCrashAfterCommitBeforeDelete: checkpoint 1 completes and is
// committed, and the job crashes before the store drops the records. The
// restored store (checkpoint 1's snapshot) still holds them; the marker
// keeps them from being written twice.
func TestTxnSinkCrashAfterCommitBeforeDelete(t *testing.T) {
	c := newCluster(t, txnPartitions, "out")
	ctx := context.Background()
	store := twophasetest.Store(t)
	s := txnSink(t, c, store)
	must(t, s.Process(ctx, 0, elems("a", "b")))
	must(t, s.Barrier(ctx, 1))
	restore := twophasetest.Checkpoint(t, store, "s/0")
	must(t, s.CheckpointComplete(ctx, 1))
	s.Writer.Close()
	want(t, c, "a", "b")

	r := txnSink(t, c, restore())
	must(t, r.Process(ctx, 0, elems("c")))
	must(t, r.Barrier(ctx, 2))
	must(t, r.CheckpointComplete(ctx, 2))
	want(t, c, "a", "b", "c")
	if r.TxnSink.Committed != 1 {
		t.Errorf("the restored sink committed %d records, want 1", r.TxnSink.Committed)
	}
}

// TestTxnSinkMarkerOfAnotherRun: a job started afresh (not restored)
// numbers its checkpoints from 1 again; the marker an earlier run left at
// a higher checkpoint must not hide its records.
func TestTxnSinkMarkerOfAnotherRun(t *testing.T) {
	c := newCluster(t, txnPartitions, "out")
	ctx := context.Background()
	s := txnSink(t, c, twophasetest.Store(t))
	must(t, s.Process(ctx, 0, elems("a")))
	must(t, s.Barrier(ctx, 5))
	must(t, s.CheckpointComplete(ctx, 5))
	s.Writer.Close()

	r := txnSink(t, c, twophasetest.Store(t))
	must(t, r.Process(ctx, 0, elems("b")))
	must(t, r.Barrier(ctx, 1))
	must(t, r.CheckpointComplete(ctx, 1))
	want(t, c, "a", "b")
}

// TestTxnSinkRetriesBrokerError: a commit the broker refuses with a
// retriable error is reported and retried until it succeeds, once.
func TestTxnSinkRetriesBrokerError(t *testing.T) {
	c := newCluster(t, txnPartitions, "out")
	ctx := context.Background()
	s := txnSink(t, c, twophasetest.Store(t))
	var retried []error
	s.OnRetry = func(err error) { retried = append(retried, err) }
	must(t, s.Process(ctx, 0, elems("a", "b")))
	must(t, s.Barrier(ctx, 1))
	// franz-go retries coordinator errors itself; this one reaches the sink.
	c.ControlKey(int16(kmsg.AddOffsetsToTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.ConcurrentTransactions.Code
		return resp, nil, true
	})
	must(t, s.CheckpointComplete(ctx, 1))
	if len(retried) != 1 || !errors.Is(retried[0], kerr.ConcurrentTransactions) ||
		!strings.Contains(retried[0].Error(), `kafka sink sink[0]: topic "out": commit of checkpoint 1`) {
		t.Errorf("retried errors %v, want one naming the sink, topic and checkpoint", retried)
	}
	want(t, c, "a", "b")
}

// TestTxnSinkFencedFailsLoudly: a commit that cannot succeed (another
// producer took the transactional id) fails at once.
func TestTxnSinkFencedFailsLoudly(t *testing.T) {
	c := newCluster(t, txnPartitions, "out")
	ctx := context.Background()
	s := txnSink(t, c, twophasetest.Store(t))
	s.OnRetry = func(err error) { t.Errorf("retried %v", err) }
	must(t, s.Process(ctx, 0, elems("a")))
	must(t, s.Barrier(ctx, 1))
	c.ControlKey(int16(kmsg.AddOffsetsToTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.ProducerFenced.Code
		return resp, nil, true
	})
	err := s.CheckpointComplete(ctx, 1)
	if !twophase.IsPermanent(err) || !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("CheckpointComplete = %v, want a permanent ProducerFenced", err)
	}
	want(t, c)
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
