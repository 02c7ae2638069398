package main

import (
	"context"
	"fmt"
	"log"
	"time"
)

// latencyResult is one checkpoint interval's figures.
type latencyResult struct {
	interval      time.Duration
	n             int // sums measured
	p50, p99, max time.Duration
	cores         float64 // the job's CPU seconds per second at -rate
}

// latencyRun produces at -rate for the warm-up and the measured span and
// measures each sum of a window inside the span.
func latencyRun(ctx context.Context, interval time.Duration) (latencyResult, error) {
	name := fmt.Sprintf("streambench-%d-%s", time.Now().UnixNano(), interval)
	in, outT, err := createTopics(ctx, name)
	if err != nil {
		return latencyResult{}, err
	}
	c, err := startConsumer(ctx, outT)
	if err != nil {
		return latencyResult{}, err
	}
	defer c.stop()
	prod, err := newProducer(in)
	if err != nil {
		return latencyResult{}, err
	}
	defer prod.cl.Close()
	j, err := startJob(name, in, outT, interval)
	if err != nil {
		return latencyResult{}, err
	}
	defer j.stop()

	warm := max(*warmup, 2*interval)
	t0 := time.Now()
	from := t0.Add(warm).Truncate(*windowSize).Add(*windowSize)
	to := from.Add(*measure)
	deadline := to.Add(3*interval + time.Minute)
	var cpu0 time.Duration
	const tick = 10 * time.Millisecond
	perTick := float64(*rate) * tick.Seconds()
	owed := 0.0
	tk := time.NewTicker(tick)
	defer tk.Stop()
	for now := range tk.C {
		if now.After(deadline) {
			return latencyResult{}, fmt.Errorf("sums of [%s, %s) not all visible by %s; job log:\n%s",
				from.Format(time.TimeOnly), to.Format(time.TimeOnly), deadline.Format(time.TimeOnly), j.tail())
		}
		if j.cmd.ProcessState != nil {
			return latencyResult{}, fmt.Errorf("job ended; log:\n%s", j.tail())
		}
		owed += perTick
		prod.send(ctx, int(owed))
		owed -= float64(int(owed))
		if cpu0 == 0 && now.After(from) {
			if cpu0, err = j.cpu(); err != nil {
				return latencyResult{}, err
			}
		}
		if now.After(to) && c.seen(measured(prod, from, to)) {
			break
		}
	}
	cpu1, err := j.cpu()
	if err != nil {
		return latencyResult{}, err
	}
	elapsed := time.Since(from)
	if err := prod.flush(ctx); err != nil {
		return latencyResult{}, fmt.Errorf("produce: %w", err)
	}
	want := measured(prod, from, to)
	if err := c.check(want); err != nil {
		return latencyResult{}, err
	}
	ds := c.latencies(want)
	return latencyResult{interval: interval, n: len(ds), p50: quantile(ds, 0.5), p99: quantile(ds, 0.99),
		max: ds[len(ds)-1], cores: (cpu1 - cpu0).Seconds() / elapsed.Seconds()}, nil
}

// measured is what the producer sent in the windows of [from, to).
func measured(p *producer, from, to time.Time) map[sumKey]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := map[sumKey]int{}
	for k, n := range p.sent {
		if s := k.start; s >= from.UnixMilli() && s < to.UnixMilli() {
			want[k] = n
		}
	}
	return want
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(q*float64(len(ds))+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// throughputResult is the max-rate run's figures.
type throughputResult struct {
	events int
	wall   time.Duration // from the job's start to its last sum visible
	cpu    time.Duration // the job's CPU over the same span
}

func (r throughputResult) perSecond() float64 { return float64(r.events) / r.wall.Seconds() }
func (r throughputResult) perCore() float64   { return float64(r.events) / r.cpu.Seconds() }

// throughputRun produces -events records, then markers that close every
// window, then starts the job and waits for every sum.
func throughputRun(ctx context.Context) (throughputResult, error) {
	name := fmt.Sprintf("streambench-%d-max", time.Now().UnixNano())
	in, outT, err := createTopics(ctx, name)
	if err != nil {
		return throughputResult{}, err
	}
	prod, err := newProducer(in)
	if err != nil {
		return throughputResult{}, err
	}
	defer prod.cl.Close()
	for sent := 0; sent < *events; sent += 1000 {
		prod.send(ctx, min(1000, *events-sent))
	}
	prod.markers(ctx)
	if err := prod.flush(ctx); err != nil {
		return throughputResult{}, fmt.Errorf("produce: %w", err)
	}
	log.Printf("max rate: %d records produced", *events)
	c, err := startConsumer(ctx, outT)
	if err != nil {
		return throughputResult{}, err
	}
	defer c.stop()
	start := time.Now()
	j, err := startJob(name, in, outT, time.Second)
	if err != nil {
		return throughputResult{}, err
	}
	defer j.stop()
	deadline := start.Add(10 * time.Minute)
	for {
		c.mu.Lock()
		total := c.total
		c.mu.Unlock()
		if total >= *events {
			break
		}
		if time.Now().After(deadline) || j.cmd.ProcessState != nil {
			return throughputResult{}, fmt.Errorf("%d of %d events summed by %s; job log:\n%s", total, *events, time.Now().Format(time.TimeOnly), j.tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
	wall := time.Since(start)
	cpu, err := j.cpu()
	if err != nil {
		return throughputResult{}, err
	}
	if err := c.check(prod.sent); err != nil {
		return throughputResult{}, err
	}
	return throughputResult{events: *events, wall: wall, cpu: cpu}, nil
}
