package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The crash test's input and output: records "key,n" produced in small
// batches while the job is killed and the broker restarted, and the
// window sums read back from the sink.

const batch = 20 // records per partition and batch

// expected is the sum of every key in every one-minute window.
func expected(t0 time.Time, perPart int) map[string]int {
	sums := map[string]int{}
	for p := range partitions {
		for i := range perPart {
			k, n, ts := record(p, i, t0)
			win := ts.Truncate(time.Minute)
			sums[fmt.Sprintf("%s|%d", k, win.UnixMilli())] += n
		}
	}
	return sums
}

func record(p, i int, t0 time.Time) (key string, n int, ts time.Time) {
	return fmt.Sprintf("k%d", (i+p)%keys), i%7 + 1, t0.Add(time.Duration(i) * time.Second)
}

// produce writes perPart records to each partition in batches about a
// second apart, so the faults fall while the job reads, then one marker
// per partition an hour of event time later to close every window. Each
// batch lands exactly once though the broker may die mid-request (put).
func produce(ctx context.Context, brokers, topic string, t0 time.Time, perPart int, seed int64, logf func(string, ...any)) error {
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < perPart; i += batch {
		for p := range partitions {
			var recs []*kgo.Record
			for j := i; j < min(i+batch, perPart); j++ {
				k, n, ts := record(p, j, t0)
				recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Timestamp: ts,
					Key: []byte(k), Value: fmt.Appendf(nil, "%s,%d", k, n)})
			}
			if err := put(ctx, brokers, topic, int32(p), int64(i), recs, logf); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(500+rng.Intn(1000)) * time.Millisecond):
		}
	}
	for p := range partitions {
		mark := &kgo.Record{Topic: topic, Partition: int32(p), Timestamp: t0.Add(time.Hour), Value: []byte("end")}
		if err := put(ctx, brokers, topic, int32(p), int64(perPart), []*kgo.Record{mark}, logf); err != nil {
			return err
		}
	}
	return nil
}

// put appends recs to partition p of topic, which holds before records,
// exactly once. A produce to a broker that dies may or may not have been
// written, and a retried one may be written twice, so put first produces
// without retries and, after any error, reads the partition's end offset
// to learn which: the input must hold every record once for the expected
// sums to be right, whatever the broker went through. An end offset that
// is neither before nor after the batch fails the test as the broker's.
func put(ctx context.Context, brokers, topic string, p int32, before int64, recs []*kgo.Record, logf func(string, ...any)) error {
	after := before + int64(len(recs))
	var last error
	failed := 0 // produce attempts that failed
	giveUp := time.Now().Add(putTimeout)
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if attempt == 1 || attempt%10 == 0 {
				logf("partition %d, records %d to %d: attempt %d: %v", p, before, after, attempt, last)
			}
			if time.Now().After(giveUp) {
				return fmt.Errorf("partition %d of %s: records %d to %d not written in %v: %w", p, topic, before, after, putTimeout, last)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second): // a request the broker holds lands or dies meanwhile
			}
		}
		end, err := endOffset(ctx, brokers, topic, p)
		switch {
		case err != nil:
			last = fmt.Errorf("end offset: %w", err) // the broker is down; it comes back
			continue
		case end == after:
			return nil
		case end != before:
			return fmt.Errorf("partition %d of %s holds %d records, want %d or %d: the broker lost or doubled input", p, topic, end, before, after)
		}
		opts := []kgo.Opt{kgo.SeedBrokers(brokers), kgo.RecordPartitioner(kgo.ManualPartitioner())}
		if failed < 3 {
			opts = append(opts, kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
		}
		// else franz-go's defaults: an idempotent producer that retries,
		// whose retries the broker deduplicates. Twice a restarted real
		// broker failed every single-try produce at once ("context
		// canceled") for minutes while it served reads and the job's
		// transactions; the end offset still checks what landed.
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = cl.ProduceSync(pctx, recs...).FirstErr()
		cancel()
		cl.Close()
		if err == nil {
			return nil
		}
		failed++
		last = fmt.Errorf("produce: %w", err)
	}
}

// putTimeout bounds how long put tries one batch: longer than any outage
// the test makes. A real broker's restart is a JVM start, which kafka.sh
// waits up to three minutes for on a busy machine, after a clean stop of
// up to 30 s.
const putTimeout = 5 * time.Minute

// endOffset reads the end offset of a partition (0 if the topic does not
// exist yet).
func endOffset(ctx context.Context, brokers, topic string, p int32) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).ListEndOffsets(lctx, topic)
	if err != nil {
		return 0, err
	}
	// A topic that does not exist yet is listed as partition -1 with
	// UNKNOWN_TOPIC_OR_PARTITION.
	if o, ok := offs.Lookup(topic, -1); ok && errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
		return 0, nil
	}
	o, ok := offs.Lookup(topic, p)
	if !ok {
		return 0, fmt.Errorf("no end offset for partition %d of %s", p, topic)
	}
	if o.Err != nil {
		return 0, o.Err
	}
	return o.Offset, nil
}

func compare(got []string, want map[string]int) string {
	seen := map[string]int{}
	var b strings.Builder
	for _, line := range got {
		seen[line]++
	}
	var lines []string
	for k, sum := range want {
		line := fmt.Sprintf("%s|%d", k, sum)
		switch n := seen[line]; {
		case n == 0:
			lines = append(lines, "missing "+line)
		case n > 1:
			lines = append(lines, fmt.Sprintf("%d times %s", n, line))
		}
		delete(seen, line)
	}
	for line, n := range seen {
		lines = append(lines, fmt.Sprintf("unexpected (%d times) %s", n, line))
	}
	sort.Strings(lines)
	for i, l := range lines {
		if i == 40 {
			fmt.Fprintf(&b, "... and %d more\n", len(lines)-i)
			break
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

func readTopic(brokers, topic string) ([]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		if errs := fs.Errors(); len(errs) > 0 {
			if errors.Is(errs[0].Err, context.DeadlineExceeded) {
				return out, nil
			}
			// The topic does not exist until the first commit.
			if strings.Contains(errs[0].Err.Error(), "UNKNOWN_TOPIC") {
				return out, nil
			}
			return nil, fmt.Errorf("reading %s: %w", topic, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
}

// readFiles reads the lines of every visible file; hidden ones are the
// sink's temporary files.
func readFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if sc.Text() != "" {
				out = append(out, sc.Text())
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
