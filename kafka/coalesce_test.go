package kafka

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafkaio"
)

// heldSink holds its first Process until release closes, so that what
// the source sends after it queues, and keeps the watermarks it gets.
type heldSink struct {
	release chan struct{}
	once    sync.Once
	first   chan struct{}
	mu      sync.Mutex
	wms     []mtime.Time
}

func (s *heldSink) Process(ctx context.Context, _ int, _ [][]byte) error {
	s.once.Do(func() { close(s.first) })
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *heldSink) Watermark(_ context.Context, _ int, wm mtime.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wms = append(s.wms, wm)
	return nil
}

func (s *heldSink) Barrier(context.Context, executor.BarrierID) error { return nil }
func (s *heldSink) Finish(context.Context) error                      { return nil }

// TestWatermarksCoalescedWhileBehind: a read whose consumer has not taken
// the last watermark sent holds later advances back (+inf still ends a
// bounded read); with coalesce_watermarks false it forwards one per poll,
// as it does whenever the consumer keeps up.
func TestWatermarksCoalescedWhileBehind(t *testing.T) {
	kafkatest.Each(t, testWatermarksCoalescedWhileBehind)
}

func testWatermarksCoalescedWhileBehind(t *testing.T, c *kafkatest.Broker) {
	const n = 6
	topic := c.Topic(t, "coalesced", 1)
	var recs []rec
	for i := range n {
		recs = append(recs, rec{val: "v", ts: int64(1000 * (i + 1))})
	}
	produce(t, c, topic, recs...)
	no := false
	for _, tc := range []struct {
		name     string
		coalesce *bool
		finite   func(int) bool
		want     string
	}{
		// The first advance goes out; the consumer then holds one record
		// and the others queue behind it, so no other does before the end.
		{"coalesced", nil, func(k int) bool { return k == 1 }, "1"},
		// The poll of the last record ends the read: +inf follows it.
		{"every poll", &no, func(k int) bool { return k == n-1 }, "5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{topic}, Start: kafkaio.StartEarliest,
				MaxRecords: n, CoalesceWatermarks: tc.coalesce}
			sink := &heldSink{release: make(chan struct{}), first: make(chan struct{})}
			ended := &sourceEnd{ended: make(chan struct{})}
			g := &executor.Graph{Checkpoints: ended, Nodes: []*executor.Node{
				{Name: "read", Parallelism: 1, Outputs: 1, NewSource: func(int, *executor.Output) (executor.Source, error) {
					return &Source{Config: &cfg, Options: ReaderOptions{Name: "read", PollWait: 20 * time.Millisecond, MaxPoll: 1}}, nil
				}},
				{Name: "sink", Parallelism: 1, Inputs: []executor.NodeInput{{Port: 0, From: 0}},
					New: func(int, *executor.Output) (executor.Operator, error) { return sink, nil }},
			}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- g.Run(ctx, nil) }()
			<-sink.first
			// The read ends while the sink holds; then the sink goes on.
			select {
			case <-ended.ended:
			case err := <-errc:
				t.Fatalf("the graph ended first: %v", err)
			}
			close(sink.release)
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			finite := 0
			for _, wm := range sink.wms {
				if wm < mtime.MaxTimestamp {
					finite++
				}
			}
			if !tc.finite(finite) || sink.wms[len(sink.wms)-1] != mtime.MaxTimestamp {
				t.Errorf("watermarks %v: %d before +inf, want %s", sink.wms, finite, tc.want)
			}
		})
	}
}

// sourceEnd is a Checkpointer that only says when the source (node 0)
// has finished.
type sourceEnd struct{ ended chan struct{} }

func (s *sourceEnd) SwitchAt(executor.BarrierID) (time.Time, bool) { return time.Time{}, false }
func (s *sourceEnd) Snapshot(int, int, executor.BarrierID) error   { return nil }
func (s *sourceEnd) Done(executor.BarrierRecord)                   {}
func (s *sourceEnd) Finished(node, _ int) {
	if node == 0 {
		close(s.ended)
	}
}
