package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafkaio"
)

// TestOwner: every partition has exactly one owner; a topic's partitions
// spread evenly over the subtasks; adding partitions moves none of the
// old ones; the answer does not change from one call (or process) to the
// next.
func TestOwner(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 8} {
		for _, topic := range []string{"events", "clicks", "impressions", ""} {
			count := make([]int, n)
			for p := range int32(16) {
				o := Owner(topic, p, n)
				if o < 0 || o >= n {
					t.Fatalf("Owner(%q, %d, %d) = %d", topic, p, n, o)
				}
				count[o]++
				owners := 0
				for i := range n {
					if (Assignment{Index: i, Of: n}).Owns(topic, p) {
						owners++
					}
				}
				if owners != 1 {
					t.Errorf("topic %q partition %d has %d owners of %d", topic, p, owners, n)
				}
			}
			if slices.Max(count)-slices.Min(count) > 1 {
				t.Errorf("topic %q over %d subtasks: they read %v of 16 partitions", topic, n, count)
			}
		}
	}
	// Fixed values: the assignment is in checkpoints, so it may never
	// change (a restore refuses a position of partitions it does not own).
	if got := fmt.Sprint(Owner("events", 0, 4), Owner("events", 5, 4), Owner("clicks", 0, 3)); got != "0 1 0" {
		t.Errorf("owners %s, want 0 1 0", got)
	}
	// Topics do not all start at subtask 0.
	starts := map[int]bool{}
	for _, topic := range []string{"a", "b", "c", "d", "e", "f"} {
		starts[Owner(topic, 0, 4)] = true
	}
	if len(starts) < 2 {
		t.Errorf("six topics all start at subtask %v", starts)
	}
}

// TestParallelReadersBudget reads 8 partitions with 3 readers, each a
// subtask of one bounded read: each reads only its own partitions, every
// record is read once, and the read ends after exactly max_records in all,
// whichever subtask read them, including when that is fewer than the
// topic holds.
func TestParallelReadersBudget(t *testing.T) { kafkatest.Each(t, testParallelReadersBudget) }

func testParallelReadersBudget(t *testing.T, c *kafkatest.Broker) {
	topic := c.Topic(t, "in", 8)
	var recs []rec
	for p := range int32(8) {
		for i := range 5 {
			recs = append(recs, rec{partition: p, val: fmt.Sprintf("%d-%d", p, i), ts: int64(1000 * (i + 1))})
		}
	}
	produce(t, c, topic, recs...)
	for _, limit := range []int64{40, 33} {
		t.Run(fmt.Sprint("max_records ", limit), func(t *testing.T) {
			const n = 3
			budget := NewBudget(limit, n)
			cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{topic}, MaxRecords: limit}
			readers := make([]*Reader, n)
			for i := range readers {
				r, err := Open(context.Background(), &cfg, ReaderOptions{Name: fmt.Sprintf("src[%d]", i),
					Assign: Assignment{Index: i, Of: n}, Budget: budget, PollWait: 20 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				readers[i] = r
			}
			seen := map[string]int{}
			for round := 0; round < 500; round++ {
				done := true
				for i, r := range readers {
					if r.Done() {
						continue
					}
					done = false
					got, err := r.Poll(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					for _, x := range got {
						if Owner(x.Topic, x.Partition, n) != i {
							t.Errorf("subtask %d read partition %d, owned by %d", i, x.Partition, Owner(x.Topic, x.Partition, n))
						}
						seen[string(x.Value)]++
					}
				}
				if done {
					break
				}
			}
			total := 0
			for v, k := range seen {
				total += k
				if k != 1 {
					t.Errorf("record %s read %d times", v, k)
				}
			}
			if int64(total) != limit {
				t.Errorf("read %d records in all, want %d", total, limit)
			}
			for i, r := range readers {
				if !r.Done() {
					t.Errorf("subtask %d has not ended", i)
				}
				if got := r.Position().Total; got != limit {
					t.Errorf("subtask %d's position counts %d in all, want %d", i, got, limit)
				}
			}
		})
	}
}

// TestBudgetRestore: a restored subtask waits for the others to add what
// they had read before it reads more, and one whose snapshot saw the read
// complete ends it at once, though the others (finished before the
// checkpoint) never join.
func TestBudgetRestore(t *testing.T) {
	b := NewBudget(10, 2)
	b.join(4, 7)
	if b.take() {
		t.Fatal("took a record before every subtask joined")
	}
	select {
	case <-b.Ready():
		t.Fatal("ready with one subtask of two")
	default:
	}
	b.join(3, 7)
	<-b.Ready()
	for range 3 {
		if !b.take() {
			t.Fatal("no record left of 10 after 7")
		}
	}
	if b.take() || !b.exhausted() || b.count() != 10 {
		t.Errorf("after 10: take ok, exhausted %v, count %d", b.exhausted(), b.count())
	}

	done := NewBudget(10, 2)
	done.join(6, 10)
	if !done.exhausted() {
		t.Error("a subtask restored with the total reached: the read goes on")
	}
}

// TestRestoreRefusesForeignPartition: a position that lists a partition
// another subtask owns is refused, naming it, rather than read again from
// the start by its owner.
func TestRestoreRefusesForeignPartition(t *testing.T) {
	c := newCluster(t, 4, "in")
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{"in"}}
	other := (Owner("in", 0, 2) + 1) % 2
	pos := Position{Next: map[string]map[int32]int64{"in": {0: 5}}}
	_, err := Open(context.Background(), &cfg, ReaderOptions{Name: "src[x]", Resume: &pos, Assign: Assignment{Index: other, Of: 2}})
	if err == nil || !strings.Contains(err.Error(), `topic "in" partition 0`) || !strings.Contains(err.Error(), "parallelism") {
		t.Errorf("restoring another subtask's partition: %v", err)
	}
	r, err := Open(context.Background(), &cfg, ReaderOptions{Name: "src[y]", Resume: &pos, Assign: Assignment{Index: 1 - other, Of: 2}})
	if err != nil {
		t.Fatalf("restoring its own partition: %v", err)
	}
	r.Close()
}

// wmSink records the watermarks a sink subtask hears.
type wmSink struct {
	mu  sync.Mutex
	wms []mtime.Time
	n   int
}

func (s *wmSink) Process(_ context.Context, _ int, elems [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += len(elems)
	return nil
}
func (s *wmSink) Watermark(_ context.Context, _ int, wm mtime.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wms = append(s.wms, wm)
	return nil
}
func (s *wmSink) Barrier(context.Context, executor.BarrierID) error { return nil }
func (s *wmSink) Finish(context.Context) error                      { return nil }

// last returns the newest watermark and the elements so far.
func (s *wmSink) last() (mtime.Time, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.wms) == 0 {
		return mtime.MinTimestamp, s.n
	}
	return s.wms[len(s.wms)-1], s.n
}

// TestSourceSubtasksIdleInBand runs a read of two partitions as two
// subtasks, each owning one, into one sink. When one subtask's partition
// goes idle the subtask says so in-band and the sink's watermark follows
// the other alone; when it comes back with a record behind, the sink's
// watermark does not go back; the read of a topic with one partition over
// two subtasks does not wait for the subtask that owns nothing.
func TestSourceSubtasksIdleInBand(t *testing.T) { kafkatest.Each(t, testSourceSubtasksIdleInBand) }

func testSourceSubtasksIdleInBand(t *testing.T, c *kafkatest.Broker) {
	topic := c.Topic(t, "in", 2)
	one := c.Topic(t, "one", 1)
	run := func(t *testing.T, topic string) (*wmSink, *Metrics, func()) {
		cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{topic}, IdleTimeoutMillis: 300}
		sink := &wmSink{}
		metrics := NewMetrics(nil)
		g := &executor.Graph{Nodes: []*executor.Node{
			{Name: "read", Parallelism: 2, Outputs: 1, NewSource: func(sub int, _ *executor.Output) (executor.Source, error) {
				return &Source{Config: &cfg, Transform: "read", Metrics: metrics,
					Options: ReaderOptions{Name: "read", PollWait: 20 * time.Millisecond, Assign: Assignment{Index: sub, Of: 2}}}, nil
			}},
			{Name: "sink", Parallelism: 1, Inputs: []executor.NodeInput{{From: 0}},
				New: func(int, *executor.Output) (executor.Operator, error) { return sink, nil }},
		}}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- g.Run(ctx, nil) }()
		return sink, metrics, func() {
			cancel()
			if err := <-errc; err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}
	}
	waitFor := func(t *testing.T, s *wmSink, what string, ok func(mtime.Time, int) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			wm, n := s.last()
			if ok(wm, n) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the sink is at watermark %v with %d elements", what, wm, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	t.Run("a subtask whose partitions are all idle", func(t *testing.T) {
		sink, _, stop := run(t, topic)
		defer stop()
		produce(t, c, topic, rec{partition: 0, val: "a", ts: 1000}, rec{partition: 1, val: "b", ts: 1000})
		waitFor(t, sink, "both at 1 s", func(wm mtime.Time, n int) bool { return wm == 1000 && n == 2 })
		// Partition 0 goes quiet; partition 1 moves on. Once partition 0's
		// subtask is idle the sink follows partition 1 alone.
		for i := range 20 {
			produce(t, c, topic, rec{partition: 1, val: "c", ts: int64(2000 + i*100)})
			time.Sleep(50 * time.Millisecond)
		}
		waitFor(t, sink, "partition 1 alone", func(wm mtime.Time, _ int) bool { return wm == 3900 })
		// Partition 0 comes back behind: nothing goes back.
		produce(t, c, topic, rec{partition: 0, val: "late", ts: 1500})
		waitFor(t, sink, "partition 0 back", func(_ mtime.Time, n int) bool { return n == 23 })
		produce(t, c, topic, rec{partition: 0, val: "d", ts: 9000}, rec{partition: 1, val: "e", ts: 8000})
		waitFor(t, sink, "both at 8 s", func(wm mtime.Time, _ int) bool { return wm == 8000 })
		sink.mu.Lock()
		defer sink.mu.Unlock()
		for i := 1; i < len(sink.wms); i++ {
			if sink.wms[i] < sink.wms[i-1] {
				t.Errorf("the sink's watermark went back: %v", sink.wms)
			}
		}
	})
	t.Run("a subtask that owns no partition", func(t *testing.T) {
		sink, metrics, stop := run(t, one)
		defer stop()
		produce(t, c, one, rec{partition: 0, val: "a", ts: 5000})
		waitFor(t, sink, "the owner's watermark", func(wm mtime.Time, n int) bool { return wm == 5000 && n == 1 })
		for _, src := range metrics.Sources() {
			if want := len(src.Partitions) == 0; src.Idle != want {
				t.Errorf("subtask %d of %d partitions: idle %v", src.Subtask, len(src.Partitions), src.Idle)
			}
		}
		// The owner's partition goes idle: both subtasks are then idle, and
		// the sink's watermark stays where it was. A subtask without
		// partitions that claimed +inf, rather than idleness, would let it
		// jump to the end of time and fire every window.
		for _, src := range metrics.Sources() {
			if len(src.Partitions) == 0 && src.Output != mtime.MinTimestamp {
				t.Errorf("subtask %d owns no partition and claims watermark %v", src.Subtask, src.Output)
			}
		}
		time.Sleep(time.Second)
		if wm, _ := sink.last(); wm != 5000 {
			t.Errorf("with every subtask idle the sink's watermark is %v, want 5000", wm)
		}
	})
}
