package kafka

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/weir-runner/weir/connector/conformance"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/wire"
)

// txnHarness is an exactly-once sink writing to topic "out" of a kfake
// cluster of its own, as subtask 0 of a job (transactional id "sink-0").
type txnHarness struct {
	t *testing.T
	c *kfake.Cluster
}

func (h *txnHarness) New(testing.TB) twophase.Sink {
	w, err := NewTxnWriter(&kafkaio.WriteConfig{BootstrapServers: h.c.ListenAddrs(), Topic: "out", Semantic: kafkaio.ExactlyOnce},
		TxnOptions{Name: "sink[0]", TransactionalID: "sink-0"})
	if err != nil {
		h.t.Fatal(err)
	}
	// A crashed instance is dropped without a word; its client goes with
	// the test.
	h.t.Cleanup(w.Close)
	return &TxnSink{Writer: w, In: kvBytesCodec(h.t)}
}

func (h *txnHarness) Element(v string) []byte { return elems(v)[0] }

// Committed reads the topic with read_committed isolation.
func (h *txnHarness) Committed(t testing.TB) []string { return committed(h.t, h.c) }

func TestSinkConformance(t *testing.T) {
	conformance.RunSink(t, "kafka (kfake)", func(t *testing.T) conformance.SinkHarness {
		return &txnHarness{t: t, c: newCluster(t, txnPartitions, "out")}
	})
}

// readHarness is a bounded read of topic "in" (two partitions) of a kfake
// cluster of its own, fed in two parts, a few records a poll so that
// barriers fall between them.
type readHarness struct {
	t     *testing.T
	c     *kfake.Cluster
	parts [][]string
	in    *wire.Codec
}

func newReadHarness(t *testing.T) *readHarness {
	h := &readHarness{t: t, c: newCluster(t, 2, "in"), in: kvBytesCodec(t)}
	for p := range 2 {
		var vals []string
		for i := range 150 {
			vals = append(vals, fmt.Sprintf("p%d-%03d", p, i))
		}
		h.parts = append(h.parts, vals)
	}
	return h
}

func (h *readHarness) New(testing.TB) executor.Source {
	cfg := &kafkaio.ReadConfig{BootstrapServers: h.c.ListenAddrs(), Topics: []string{"in"}, MaxRecords: 300,
		Start: kafkaio.StartEarliest}
	return &Source{Config: cfg, Options: ReaderOptions{Name: "read", PollWait: 20 * time.Millisecond, MaxPoll: 5}}
}

func (h *readHarness) Parts() [][]string { return h.parts }

// Feed produces part i, spread over both partitions.
func (h *readHarness) Feed(t testing.TB, part int) {
	var recs []rec
	for i, v := range h.parts[part] {
		recs = append(recs, rec{partition: int32(i % 2), key: "k", val: v, ts: int64(1000*part + i)})
	}
	produce(h.t, h.c, "in", recs...)
}

func (h *readHarness) Value(e []byte) (string, error) {
	v, err := h.in.ValueOf(e)
	if err != nil {
		return "", err
	}
	_, val, err := splitKV(v)
	return string(val), err
}

func TestSourceConformance(t *testing.T) {
	conformance.RunSource(t, "kafka (kfake)", func(t *testing.T) conformance.SourceHarness { return newReadHarness(t) })
}
