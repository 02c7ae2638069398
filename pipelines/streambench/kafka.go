package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sumKey names one output sum: a key's window, by its start in Unix ms.
type sumKey struct {
	key   string
	start int64
}

func keyName(i int) string { return fmt.Sprintf("k%03d", i) }

// createTopics makes the run's input and output topics.
func createTopics(ctx context.Context, name string) (in, outT string, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokers, ",")...))
	if err != nil {
		return "", "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	in, outT = name+"-in", name+"-out"
	for _, t := range []struct {
		name string
		n    int32
	}{{in, int32(*partitions)}, {outT, 1}} {
		rs, err := adm.CreateTopics(ctx, t.n, 1, nil, t.name)
		if err != nil {
			return "", "", fmt.Errorf("create topic %s: %w", t.name, err)
		}
		if r := rs[t.name]; r.Err != nil {
			return "", "", fmt.Errorf("create topic %s: %w", t.name, r.Err)
		}
	}
	return in, outT, nil
}

// producer writes "key,1" records to the input topic, key i to partition
// i mod partitions, each stamped with the time it is produced, and counts
// what it wrote per key and window.
type producer struct {
	cl    *kgo.Client
	topic string
	mu    sync.Mutex
	sent  map[sumKey]int
	total int
	next  int // the next key
	err   error
}

func newProducer(topic string) (*producer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokers, ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		return nil, err
	}
	return &producer{cl: cl, topic: topic, sent: map[sumKey]int{}}, nil
}

// send produces n records at now.
func (p *producer) send(ctx context.Context, n int) {
	now := time.Now()
	start := now.Truncate(*windowSize).UnixMilli()
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		k := p.next % *keys
		p.next++
		p.sent[sumKey{keyName(k), start}]++
		p.total++
		r := &kgo.Record{Topic: p.topic, Partition: int32(k % *partitions), Key: []byte(keyName(k)),
			Value: []byte(keyName(k) + ",1"), Timestamp: now}
		p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				p.mu.Lock()
				if p.err == nil {
					p.err = err
				}
				p.mu.Unlock()
			}
		})
	}
}

// markers produce one record a partition far ahead in event time, which
// the job drops but which closes every window before it.
func (p *producer) markers(ctx context.Context) {
	at := time.Now().Add(time.Hour)
	for i := range *partitions {
		p.cl.Produce(ctx, &kgo.Record{Topic: p.topic, Partition: int32(i), Value: []byte("marker"), Timestamp: at}, nil)
	}
}

func (p *producer) flush(ctx context.Context) error {
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// consumer reads the output topic read_committed and notes when each sum
// became visible.
type consumer struct {
	mu      sync.Mutex
	visible map[sumKey]time.Time
	sums    map[sumKey]int
	total   int // of every sum read
	dups    []sumKey
	bad     []string
	done    chan struct{}
	cancel  context.CancelFunc
}

func startConsumer(ctx context.Context, topic string) (*consumer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &consumer{visible: map[sumKey]time.Time{}, sums: map[sumKey]int{}, done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(c.done)
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) { c.note(string(r.Value), now) })
		}
	}()
	return c, nil
}

// note records the sum "key|window start|sum" seen at now.
func (c *consumer) note(v string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := strings.Split(v, "|")
	if len(f) != 3 {
		c.bad = append(c.bad, v)
		return
	}
	start, err1 := strconv.ParseInt(f[1], 10, 64)
	sum, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		c.bad = append(c.bad, v)
		return
	}
	k := sumKey{f[0], start}
	if _, seen := c.visible[k]; seen {
		c.dups = append(c.dups, k)
		return
	}
	c.visible[k], c.sums[k] = now, sum
	c.total += sum
}

func (c *consumer) stop() { c.cancel(); <-c.done }

// check compares what the consumer saw of the sums in want with want, and
// reports every duplicate or unreadable record.
func (c *consumer) check(want map[sumKey]int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []string
	if len(c.dups) > 0 {
		errs = append(errs, fmt.Sprintf("%d sums seen twice (first %v)", len(c.dups), c.dups[0]))
	}
	if len(c.bad) > 0 {
		errs = append(errs, fmt.Sprintf("%d unreadable records (first %q)", len(c.bad), c.bad[0]))
	}
	missing, wrong := 0, 0
	for k, n := range want {
		got, ok := c.sums[k]
		switch {
		case !ok:
			missing++
		case got != n:
			wrong++
			if wrong == 1 {
				errs = append(errs, fmt.Sprintf("sum of %v is %d, want %d", k, got, n))
			}
		}
	}
	if missing > 0 || wrong > 0 {
		errs = append(errs, fmt.Sprintf("%d of %d sums missing, %d wrong", missing, len(want), wrong))
	}
	if len(errs) > 0 {
		return fmt.Errorf("output: %s", strings.Join(errs, "; "))
	}
	return nil
}

// seen reports whether every sum of want is visible.
func (c *consumer) seen(want map[sumKey]int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range want {
		if _, ok := c.visible[k]; !ok {
			return false
		}
	}
	return true
}

// latencies are visible time minus window end of the sums of want.
func (c *consumer) latencies(want map[sumKey]int) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ds []time.Duration
	for k := range want {
		if t, ok := c.visible[k]; ok {
			ds = append(ds, t.Sub(windowEnd(k.start)))
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds
}
