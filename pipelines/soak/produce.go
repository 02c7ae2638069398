package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The producer writes the soak job's input for the whole run: records
// keyed by a word, valued 1 to 100, at a steady rate, each stamped with
// an event time a little behind the producer's clock. Key i always goes
// to partition i mod the partitions, so a key's records stay in order of
// production within their partition. The last partition is bursty: it
// gets records only in the first third of every minute, and is idle
// (longer than the job's idle timeout) the rest of it. It remembers the
// count and sum of what each key-window received, from the records the
// broker acknowledged, for the check of the output.

// Event-time offsets of the records: most are a little behind the clock
// (within the job's out-of-orderness bound of 3 s), lateShare of them
// well behind it. Late records stay within the job's allowed lateness:
// a record at clock-d lands in a window that ends after clock-d, and the
// watermark is at most clock-3s, so with d under 20 s and a lateness of
// 30 s none is ever dropped.
const (
	jitter    = 2 * time.Second
	lateMin   = 5 * time.Second
	lateMax   = 20 * time.Second
	lateShare = 0.01
)

// producedHeader is the record header holding the producer's clock, in
// Unix milliseconds, when it made the record: with the record's event
// time it says how late the record was meant to be (explain.go).
const producedHeader = "produced"

// windowKey is one key's window, by its start in Unix milliseconds.
type windowKey struct {
	key   string
	start int64
}

// agg is a key-window's count and sum.
type agg struct{ count, sum int64 }

type producer struct {
	cl         *kgo.Client
	topic      string
	rate       int // records per second
	keys       int
	partitions int32
	window     time.Duration
	rng        *rand.Rand

	mu struct {
		sync.Mutex
		want     map[windowKey]agg
		produced int64
	}
}

func newProducer(brokers []string, topic string, rate, keys int, partitions int32, window time.Duration, seed uint64) (*producer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return nil, err
	}
	p := &producer{cl: cl, topic: topic, rate: rate, keys: keys, partitions: partitions, window: window,
		rng: rand.New(rand.NewPCG(seed, 1))}
	p.mu.want = map[windowKey]agg{}
	return p, nil
}

func keyName(i int) string { return fmt.Sprintf("k%03d", i) }

// run produces until ctx ends, in batches every 20 ms that keep the
// total at rate per second since the start; it returns the first error
// of a produce, after which what reached the broker is unknown.
func (p *producer) run(ctx context.Context) error {
	defer p.cl.Close()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var sent int64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		now := time.Now()
		due := int64(now.Sub(start).Seconds()*float64(p.rate)) - sent
		// A broker that stalls is not made up for all at once.
		due = min(due, int64(p.rate))
		if due <= 0 {
			continue
		}
		burst := now.Sub(start)%time.Minute < 20*time.Second
		recs := make([]*kgo.Record, 0, due)
		for range due {
			recs = append(recs, p.record(now, burst))
		}
		// ProduceSync with a context that outlives ctx: a batch begun is
		// finished, so that want holds exactly what the broker has.
		if err := p.cl.ProduceSync(context.WithoutCancel(ctx), recs...).FirstErr(); err != nil {
			return fmt.Errorf("producing to %s: %w", p.topic, err)
		}
		sent += due
		p.note(recs)
	}
}

// record makes one record at the producer's clock now; while burst is
// false, the last partition gets none.
func (p *producer) record(now time.Time, burst bool) *kgo.Record {
	k := p.rng.IntN(p.keys)
	part := int32(k) % p.partitions
	for !burst && part == p.partitions-1 && p.partitions > 1 {
		k = p.rng.IntN(p.keys)
		part = int32(k) % p.partitions
	}
	d := time.Duration(p.rng.Int64N(int64(jitter)))
	if p.rng.Float64() < lateShare {
		d = lateMin + time.Duration(p.rng.Int64N(int64(lateMax-lateMin)))
	}
	return &kgo.Record{Topic: p.topic, Partition: part, Key: []byte(keyName(k)),
		Value: []byte(strconv.Itoa(1 + p.rng.IntN(100))), Timestamp: now.Add(-d),
		Headers: []kgo.RecordHeader{{Key: producedHeader, Value: strconv.AppendInt(nil, now.UnixMilli(), 10)}}}
}

// note adds acknowledged records to the expected windows.
func (p *producer) note(recs []*kgo.Record) {
	w := p.window.Milliseconds()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range recs {
		ts := r.Timestamp.UnixMilli() // Kafka keeps milliseconds
		wk := windowKey{string(r.Key), ts - ts%w}
		n, _ := strconv.ParseInt(string(r.Value), 10, 64)
		a := p.mu.want[wk]
		p.mu.want[wk] = agg{a.count + 1, a.sum + n}
	}
	p.mu.produced += int64(len(recs))
}

// produced returns how many records the broker has acknowledged.
func (p *producer) produced() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.produced
}

// want returns a copy of the expected key-windows.
func (p *producer) want() map[windowKey]agg {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[windowKey]agg, len(p.mu.want))
	for k, v := range p.mu.want {
		out[k] = v
	}
	return out
}
