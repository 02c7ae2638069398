package kafka

import (
	"fmt"
	"testing"
	"time"

	"github.com/weir-runner/weir/connector/conformance"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/wire"
)

// brokerName names a broker kind in the conformance table.
func brokerName(b *kafkatest.Broker) string {
	if b.Real() {
		return "kafka (Apache Kafka)"
	}
	return "kafka (kfake)"
}

// txnHarness is an exactly-once sink writing to a topic of its own, as
// subtask 0 of a job (every instance with one transactional id).
type txnHarness struct {
	t *testing.T
	e *txnEnv
}

func (h *txnHarness) New(testing.TB) twophase.Sink {
	w, err := NewTxnWriter(&kafkaio.WriteConfig{BootstrapServers: h.e.b.Addrs, Topic: h.e.topic, Semantic: kafkaio.ExactlyOnce},
		TxnOptions{Name: "sink[0]", TransactionalID: h.e.txnID})
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
func (h *txnHarness) Committed(testing.TB) []string { return h.e.committed(h.t) }

func TestSinkConformance(t *testing.T) {
	kafkatest.Each(t, func(t *testing.T, b *kafkatest.Broker) {
		conformance.RunSink(t, brokerName(b), func(t *testing.T) conformance.SinkHarness {
			return &txnHarness{t: t, e: newTxnEnv(t, b)}
		})
	})
}

// readHarness is a bounded read of a topic of its own (two partitions),
// fed in two parts, a few records a poll so that barriers fall between
// them.
type readHarness struct {
	t     *testing.T
	b     *kafkatest.Broker
	topic string
	parts [][]string
	in    *wire.Codec
}

func newReadHarness(t *testing.T, b *kafkatest.Broker) *readHarness {
	h := &readHarness{t: t, b: b, topic: b.Topic(t, "in", 2), in: kvBytesCodec(t)}
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
	cfg := &kafkaio.ReadConfig{BootstrapServers: h.b.Addrs, Topics: []string{h.topic}, MaxRecords: 300,
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
	produce(h.t, h.b, h.topic, recs...)
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
	kafkatest.Each(t, func(t *testing.T, b *kafkatest.Broker) {
		conformance.RunSource(t, brokerName(b), func(t *testing.T) conformance.SourceHarness { return newReadHarness(t, b) })
	})
}
