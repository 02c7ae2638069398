package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/kafkaio"
)

// WriterOptions are what a Writer needs besides its configuration.
type WriterOptions struct {
	// Name names the sink in errors and job messages.
	Name string
	// OnError hears every failed produce the writer retries; nil drops
	// them.
	OnError func(error)
	// ClientOpts are added to the franz-go client's options.
	ClientOpts []kgo.Opt
}

// Writer produces records to one topic, at least once: every record
// written before a Flush that returned nil is in Kafka. A record whose
// produce fails is produced again, with back-off, until it succeeds or
// the context ends; it may then be in Kafka twice, and records of one key
// may change order.
type Writer struct {
	name    string
	topic   string
	client  *kgo.Client
	onError func(error)

	mu      sync.Mutex
	failed  []*kgo.Record
	lastErr error
	written int64
}

// NewWriter returns a writer to cfg's topic. It does not connect until the
// first record.
func NewWriter(cfg *kafkaio.WriteConfig, opts WriterOptions) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kafka sink %s: %w", opts.Name, err)
	}
	kopts := []kgo.Opt{
		kgo.SeedBrokers(cfg.BootstrapServers...),
		kgo.DefaultProduceTopic(cfg.Topic),
		// Give up on a record after a while, so the failure reaches Flush
		// and is reported, and the record is produced again from there.
		kgo.RecordDeliveryTimeout(30 * time.Second),
		kgo.RetryTimeout(5 * time.Second),
	}
	popts, err := producerOpts(cfg)
	if err != nil {
		return nil, fmt.Errorf("kafka sink %s: %w", opts.Name, err)
	}
	cl, err := kgo.NewClient(append(append(kopts, popts...), opts.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka sink %s: %w", opts.Name, err)
	}
	if opts.OnError == nil {
		opts.OnError = func(error) {}
	}
	return &Writer{name: opts.Name, topic: cfg.Topic, client: cl, onError: opts.OnError}, nil
}

// producerKeys are the producer_config keys the writer uses.
var producerKeys = map[string]bool{"client.id": true, "linger.ms": true, "compression.type": true,
	"allow.auto.create.topics": true}

// UnknownProducerKeys returns the producer_config keys the writer ignores.
func UnknownProducerKeys(cfg *kafkaio.WriteConfig) []string {
	return unknownKeys(cfg.ProducerConfig, producerKeys)
}

// unknownKeys returns the keys of config that known does not hold.
func unknownKeys(config map[string]string, known map[string]bool) []string {
	var out []string
	for k := range config {
		if !known[k] {
			out = append(out, k)
		}
	}
	return out
}

func producerOpts(cfg *kafkaio.WriteConfig) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	// Java's producer lets a broker that allows it create the topic it
	// writes to; pipelines written for it (Beam's kafkaio tests among
	// them) expect that. "false" turns it off.
	switch v := cfg.ProducerConfig["allow.auto.create.topics"]; v {
	case "", "true":
		opts = append(opts, kgo.AllowAutoTopicCreation())
	case "false":
	default:
		return nil, fmt.Errorf("producer_config allow.auto.create.topics %q is not true or false", v)
	}
	if id := cfg.ProducerConfig["client.id"]; id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	if v := cfg.ProducerConfig["linger.ms"]; v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("producer_config linger.ms %q is not a number of milliseconds", v)
		}
		opts = append(opts, kgo.ProducerLinger(time.Duration(ms)*time.Millisecond))
	}
	switch c := cfg.ProducerConfig["compression.type"]; c {
	case "", "none":
	case "gzip":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	case "snappy":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	case "lz4":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case "zstd":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	default:
		return nil, fmt.Errorf("producer_config compression.type %q is not one of none, gzip, snappy, lz4, zstd", c)
	}
	return opts, nil
}

// Write produces a record asynchronously. It blocks only when the
// client's buffer is full. The key and value must not change until Flush
// returns.
func (w *Writer) Write(ctx context.Context, key, value []byte) {
	w.produce(ctx, &kgo.Record{Topic: w.topic, Key: key, Value: value})
}

func (w *Writer) produce(ctx context.Context, rec *kgo.Record) {
	w.client.Produce(ctx, rec, func(r *kgo.Record, err error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			w.failed = append(w.failed, r)
			w.lastErr = err
			return
		}
		w.written++
	})
}

// Flush returns once every record written so far is in Kafka. Records that
// failed are reported and produced again, with back-off, until they are
// written or ctx ends.
func (w *Writer) Flush(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		if err := w.client.Flush(ctx); err != nil {
			return fmt.Errorf("kafka sink %s: topic %q: flush: %w", w.name, w.topic, err)
		}
		w.mu.Lock()
		failed, lastErr := w.failed, w.lastErr
		w.failed, w.lastErr = nil, nil
		w.mu.Unlock()
		if len(failed) == 0 {
			return nil
		}
		if errors.Is(lastErr, kgo.ErrClientClosed) || ctx.Err() != nil {
			return fmt.Errorf("kafka sink %s: topic %q: %d records not written: %w", w.name, w.topic, len(failed), lastErr)
		}
		w.onError(fmt.Errorf("kafka sink %s: topic %q: %d records not written: %w (retrying)", w.name, w.topic, len(failed), lastErr))
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return fmt.Errorf("kafka sink %s: topic %q: %d records not written: %w", w.name, w.topic, len(failed), err)
		}
		for _, r := range failed {
			w.produce(ctx, &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
		}
	}
}

// Written returns how many records Kafka acknowledged.
func (w *Writer) Written() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// Close closes the client; records not flushed are lost.
func (w *Writer) Close() { w.client.Close() }
