package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/wire"
)

// kvBytesCodec is the wire codec of KV<bytes, bytes> in the global window.
func kvBytesCodec(t *testing.T) *wire.Codec {
	t.Helper()
	coders := map[string]*pipepb.Coder{
		"b":  {Spec: &pipepb.FunctionSpec{Urn: wire.URNBytes}},
		"kv": {Spec: &pipepb.FunctionSpec{Urn: wire.URNKV}, ComponentCoderIds: []string{"b", "b"}},
		"gw": {Spec: &pipepb.FunctionSpec{Urn: wire.URNGlobalWindow}},
	}
	win, err := wire.MeasureFor(coders, "gw")
	if err != nil {
		t.Fatal(err)
	}
	val, err := wire.MeasureFor(coders, "kv")
	if err != nil {
		t.Fatal(err)
	}
	return wire.NewCodec(win, val)
}

// TestEncodeRecords checks the source's elements decode as windowed
// KV<bytes, bytes> at their event times, in the global window with the
// pane sources produce.
func TestEncodeRecords(t *testing.T) {
	codec := kvBytesCodec(t)
	recs := []Record{
		{Key: []byte("k"), Value: []byte("v"), EventTime: 1000},
		{Key: nil, Value: []byte(strings.Repeat("x", 300)), EventTime: -5},
		{Key: []byte("key"), Value: nil, EventTime: maxTime},
	}
	for i, e := range encodeRecords(recs) {
		wv, n, err := codec.Decode(e, nil)
		if err != nil || n != len(e) {
			t.Fatalf("record %d: %v (read %d of %d bytes)", i, err, n, len(e))
		}
		if wv.Timestamp != recs[i].EventTime || len(wv.Windows) != 1 || len(wv.Windows[0]) != 0 ||
			len(wv.Pane) != 1 || wv.Pane[0] != wire.PaneNoFiring {
			t.Errorf("record %d: header %+v", i, wv)
		}
		k, kn, err := readBytes(wv.Value)
		if err != nil {
			t.Fatal(err)
		}
		v, _, err := readBytes(wv.Value[kn:])
		if err != nil {
			t.Fatal(err)
		}
		if string(k) != string(recs[i].Key) || string(v) != string(recs[i].Value) {
			t.Errorf("record %d: key %q value %q", i, k, v)
		}
	}
}

func TestReadBytesShort(t *testing.T) {
	for _, b := range [][]byte{nil, {5, 'a'}, {0x80}} {
		if _, _, err := readBytes(b); err == nil {
			t.Errorf("readBytes(%v): no error", b)
		}
	}
}

// TestSink writes elements as the sink operator receives them, windowed
// KV<bytes, bytes>, and reads the records back.
func TestSink(t *testing.T) {
	c := newCluster(t, 1, "out")
	w, err := NewWriter(&kafkaio.WriteConfig{BootstrapServers: c.Addrs, Topic: "out"}, WriterOptions{Name: "sink"})
	if err != nil {
		t.Fatal(err)
	}
	sink := &Sink{Writer: w, In: kvBytesCodec(t)}
	elems := encodeRecords([]Record{{Key: []byte("a"), Value: []byte("1")}, {Value: []byte("2")}})
	ctx := context.Background()
	if err := sink.Process(ctx, 0, elems); err != nil {
		t.Fatal(err)
	}
	if err := sink.Barrier(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if w.Written() != 2 {
		t.Errorf("written %d after the barrier, want 2", w.Written())
	}
	if err := sink.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, &kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{"out"}, MaxRecords: 2},
		ReaderOptions{Name: "check", PollWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := readAll(t, r, 2, 100)
	if len(got) != 2 || string(got[0].Key) != "a" || string(got[0].Value) != "1" || got[1].Key != nil || string(got[1].Value) != "2" {
		t.Errorf("read back %+v", got)
	}
	if err := sink.Process(ctx, 0, [][]byte{{1, 2, 3}}); err == nil || !strings.Contains(err.Error(), "kafka sink sink") {
		t.Errorf("a broken element: %v", err)
	}
}

// TestMetrics checks a reader's statistics become job metrics: the
// watermark, spread and pause count per source, and per partition its
// watermark and lag.
func TestMetrics(t *testing.T) {
	c := newCluster(t, 2, "in")
	produce(t, c, "in", rec{partition: 0, val: "a", ts: 1000}, rec{partition: 0, val: "b", ts: 2000},
		rec{partition: 1, val: "c", ts: 61000})
	groups := NewGroups()
	m := NewMetrics(groups)
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{"in"}, MaxRecords: 2,
		AlignmentGroup: "g", MaxDriftMillis: 1000}
	r, err := Open(context.Background(), &cfg, ReaderOptions{Name: "src", Groups: groups, PollWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m.add("t1", r)
	readAll(t, r, 1, 100) // at least one record, not the end
	names := map[string]bool{}
	for _, mi := range m.MonitoringInfos() {
		if mi.GetLabels()["PTRANSFORM"] != "t1" || mi.GetLabels()["NAMESPACE"] != MetricsNamespace {
			t.Errorf("labels %v", mi.GetLabels())
		}
		names[mi.GetLabels()["NAME"]] = true
	}
	for _, want := range []string{MetricWatermark, MetricSpread, MetricPaused, MetricRecords, MetricLate,
		MetricPartitionWM + "/in/0", MetricPartitionWM + "/in/1", MetricPartitionLag + "/in/0",
		MetricAlignmentSpread + "/g", MetricAlignmentBound + "/g", MetricAlignmentPaused + "/g"} {
		if !names[want] {
			t.Errorf("no metric %s among %v", want, sortedKeys(names))
		}
	}
}
