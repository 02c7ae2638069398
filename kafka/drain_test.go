package kafka

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafkaio"
)

// watermarkSink is a countSink that also keeps the last watermark it got.
type watermarkSink struct {
	countSink
	wmu sync.Mutex
	wm  mtime.Time
}

func (s *watermarkSink) Watermark(_ context.Context, _ int, wm mtime.Time) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.wm = wm
	return nil
}

func (s *watermarkSink) last() mtime.Time {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.wm
}

// drainGraph is an unbounded read of cfg, drained when drain closes,
// into sink.
func drainGraph(cfg kafkaio.ReadConfig, drain <-chan struct{}, sink *watermarkSink) *executor.Graph {
	return &executor.Graph{Nodes: []*executor.Node{
		{Name: "read", Parallelism: 1, Outputs: 1, NewSource: func(int, *executor.Output) (executor.Source, error) {
			return &Source{Config: &cfg, Drain: drain, Options: ReaderOptions{Name: "read", PollWait: 20 * time.Millisecond}}, nil
		}},
		{Name: "sink", Parallelism: 1, Inputs: []executor.NodeInput{{Port: 0, From: 0}},
			New: func(int, *executor.Output) (executor.Operator, error) { return sink, nil }},
	}}
}

// TestDrainEndsRead: a drained unbounded read ends where it is, as a
// bounded read ends: the graph finishes without error, the watermark goes
// to +inf, and the offsets it read are committed.
func TestDrainEndsRead(t *testing.T) { kafkatest.Each(t, testDrainEndsRead) }

func testDrainEndsRead(t *testing.T, c *kafkatest.Broker) {
	e := newCommitEnv(t, c)
	e.produceInput(t)
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{e.in}, Start: kafkaio.StartEarliest,
		CommitOffsetsInFinalize: true, ConsumerConfig: map[string]string{"group.id": e.group}}
	sink := &watermarkSink{countSink: countSink{seen: make(chan int, 16)}}
	drain := make(chan struct{})
	g := drainGraph(cfg, drain, sink)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- g.Run(ctx, nil) }()
	for n := 0; n < 5; n = <-sink.seen {
	}
	close(drain)
	if err := <-errc; err != nil {
		t.Fatalf("drained read: %v", err)
	}
	if wm := sink.last(); wm != mtime.MaxTimestamp {
		t.Errorf("last watermark %v, want +inf", wm)
	}
	if got := e.groupOffsets(t); got != "0:3 1:2 " {
		t.Errorf("committed %s, want the offsets read, 0:3 1:2", got)
	}
}

// TestDrainWhileOpening: a read drained while it waits for brokers that
// do not answer ends at once, having read nothing, instead of retrying for
// ever.
func TestDrainWhileOpening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	cfg := kafkaio.ReadConfig{BootstrapServers: []string{addr}, Topics: []string{"in"}}
	sink := &watermarkSink{countSink: countSink{seen: make(chan int, 16)}}
	drain := make(chan struct{})
	g := drainGraph(cfg, drain, sink)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- g.Run(ctx, nil) }()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-errc:
		t.Fatalf("the read ended (%v) before the drain", err)
	default:
	}
	close(drain)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("drained read: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the drained read did not end")
	}
	if wm, n := sink.last(), sink.n; wm != mtime.MaxTimestamp || n != 0 {
		t.Errorf("last watermark %v after %d records, want +inf after none", wm, n)
	}
}
