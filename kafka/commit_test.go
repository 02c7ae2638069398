package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafkaio"
)

// countSink counts the elements it is given and may fail.
type countSink struct {
	mu   sync.Mutex
	n    int
	seen chan int
	fail error
}

func (s *countSink) Process(_ context.Context, _ int, elems [][]byte) error {
	if s.fail != nil {
		return s.fail
	}
	s.mu.Lock()
	s.n += len(elems)
	n := s.n
	s.mu.Unlock()
	select {
	case s.seen <- n:
	default:
	}
	return nil
}
func (s *countSink) Watermark(context.Context, int, mtime.Time) error  { return nil }
func (s *countSink) Barrier(context.Context, executor.BarrierID) error { return nil }
func (s *countSink) Finish(context.Context) error                      { return nil }

// commitEnv is one test's input topic, of two partitions, and consumer
// group, on one broker.
type commitEnv struct {
	b         *kafkatest.Broker
	in, group string
}

func newCommitEnv(t *testing.T, b *kafkatest.Broker) *commitEnv {
	return &commitEnv{b: b, in: b.Topic(t, "in", 2), group: b.Name(t, "g")}
}

// graph is a read of the input with offset commits into sink.
func (e *commitEnv) graph(cfg kafkaio.ReadConfig, sink *countSink, acks chan executor.BarrierID) *executor.Graph {
	cfg.BootstrapServers, cfg.Topics = e.b.Addrs, []string{e.in}
	cfg.CommitOffsetsInFinalize = true
	cfg.ConsumerConfig = map[string]string{"group.id": e.group}
	return &executor.Graph{
		OnAck: func(node, _ int, id executor.BarrierID) {
			if node == 0 {
				acks <- id
			}
		},
		Nodes: []*executor.Node{
			{Name: "read", Parallelism: 1, Outputs: 1, NewSource: func(int, *executor.Output) (executor.Source, error) {
				return &Source{Config: &cfg, Options: ReaderOptions{Name: "read", PollWait: 20 * time.Millisecond}}, nil
			}},
			{Name: "sink", Parallelism: 1, Inputs: []executor.NodeInput{{Port: 0, From: 0}},
				New: func(int, *executor.Output) (executor.Operator, error) { return sink, nil }},
		},
	}
}

// groupOffsets returns the group's committed offsets of the input as
// "partition:offset" strings; "none" without any.
func (e *commitEnv) groupOffsets(t *testing.T) string {
	t.Helper()
	resps, err := e.b.Admin(t).FetchOffsets(context.Background(), e.group)
	for kerr.IsRetriable(err) {
		// A real broker's group coordinator is not available until the
		// offsets topic, made at the first use of any group, is loaded.
		time.Sleep(50 * time.Millisecond)
		resps, err = e.b.Admin(t).FetchOffsets(context.Background(), e.group)
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return "none"
	}
	if err != nil {
		t.Fatal(err)
	}
	s := ""
	for p := range int32(2) {
		if r, ok := resps.Lookup(e.in, p); ok && r.Err == nil && r.At >= 0 {
			s += fmt.Sprintf("%d:%d ", p, r.At)
		}
	}
	if s == "" {
		return "none"
	}
	return s
}

func (e *commitEnv) produceInput(t *testing.T) {
	produce(t, e.b, e.in, rec{partition: 0, val: "a"}, rec{partition: 0, val: "b"}, rec{partition: 0, val: "c"},
		rec{partition: 1, val: "d"}, rec{partition: 1, val: "e"})
}

// TestCommitOnCheckpoint: an unbounded read commits the offsets of its
// snapshot of a checkpoint when that checkpoint completes, and nothing
// when the job is cancelled.
func TestCommitOnCheckpoint(t *testing.T) { kafkatest.Each(t, testCommitOnCheckpoint) }

func testCommitOnCheckpoint(t *testing.T, c *kafkatest.Broker) {
	e := newCommitEnv(t, c)
	e.produceInput(t)
	sink := &countSink{seen: make(chan int, 16)}
	acks := make(chan executor.BarrierID, 1)
	g := e.graph(kafkaio.ReadConfig{Start: kafkaio.StartEarliest}, sink, acks)
	ctx, cancel := context.WithCancel(context.Background())
	barriers := make(chan executor.BarrierID, 1)
	errc := make(chan error, 1)
	go func() { errc <- g.Run(ctx, barriers) }()
	for n := 0; n < 5; n = <-sink.seen {
	}
	if got := e.groupOffsets(t); got != "none" {
		t.Fatalf("committed %s before any checkpoint completed", got)
	}
	barriers <- 1
	<-acks
	g.CheckpointComplete(1)
	for e.groupOffsets(t) != "0:3 1:2 " {
		time.Sleep(10 * time.Millisecond) // the source commits at its next poll
	}
	// Records read after the checkpoint are not committed by the cancel.
	produce(t, c, e.in, rec{partition: 0, val: "f"})
	for n := 5; n < 6; n = <-sink.seen {
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want canceled", err)
	}
	if got := e.groupOffsets(t); got != "0:3 1:2 " {
		t.Errorf("committed %s after the cancel, want the checkpoint's 0:3 1:2", got)
	}
}

// TestCommitAtEnd: a bounded read commits its final offsets once the
// whole graph has finished, and not when the graph fails.
func TestCommitAtEnd(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprint("fail=", fail), func(t *testing.T) {
			kafkatest.Each(t, func(t *testing.T, c *kafkatest.Broker) {
				e := newCommitEnv(t, c)
				e.produceInput(t)
				sink := &countSink{seen: make(chan int, 16)}
				if fail {
					sink.fail = errors.New("boom")
				}
				g := e.graph(kafkaio.ReadConfig{Start: kafkaio.StartEarliest, MaxRecords: 5}, sink, make(chan executor.BarrierID, 1))
				err := g.Run(context.Background(), nil)
				want := "0:3 1:2 "
				if fail {
					want = "none"
					if err == nil {
						t.Fatal("Run succeeded, want the sink's failure")
					}
				} else if err != nil {
					t.Fatal(err)
				}
				if got := e.groupOffsets(t); got != want {
					t.Errorf("committed %s, want %s", got, want)
				}
			})
		})
	}
}
