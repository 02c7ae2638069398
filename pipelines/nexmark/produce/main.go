// Command produce fills a Kafka topic with Nexmark's events, for the
// nexmark command to read with --source=kafka:
//
//	go run ./internal/tools/kfake --port=9092 &
//	go run ./pipelines/nexmark/produce --kafka_brokers=localhost:9092 --kafka_topic=nexmark --num_events=1000000
//	go run ./pipelines/nexmark --runner=weir --source=kafka --kafka_topic=nexmark --num_events=1000000 --query=5
//
// It takes the generator's flags (the same configuration must be given to
// both commands, so that the reader's out-of-orderness bound fits) and
// writes each generator's events in order to partition generator mod
// --partitions, creating the topic if it is missing. A record's value is
// the event's binary encoding (package model), its key the event id (8
// bytes, big-endian) and its timestamp the event time. The write is
// idempotent per run (franz-go's default), not transactional: run it once
// per topic.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/generator"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

func main() {
	cfg := config.Default()
	cfg.AddFlags(flag.CommandLine)
	brokers := flag.String("kafka_brokers", "localhost:9092", "bootstrap servers, comma-separated")
	topic := flag.String("kafka_topic", "nexmark", "topic to fill")
	partitions := flag.Int("partitions", 4, "partitions of the topic, if it is created")
	flag.Parse()
	start := time.Now()
	n, err := Produce(context.Background(), cfg, strings.Split(*brokers, ","), *topic, *partitions)
	if err != nil {
		log.Fatalf("produce: %v", err)
	}
	fmt.Fprintf(os.Stderr, "produce: %d events to %s in %v\n", n, *topic, time.Since(start).Round(time.Millisecond))
}

// Produce writes the events of cfg to topic and returns how many.
func Produce(ctx context.Context, cfg config.Config, brokers []string, topic string, partitions int) (int64, error) {
	g, err := generator.New(cfg)
	if err != nil {
		return 0, err
	}
	if cfg.NumEvents == 0 {
		return 0, errors.New("--num_events must be set: the generator never ends otherwise")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	parts, err := ensureTopic(ctx, kadm.NewClient(cl), topic, partitions)
	if err != nil {
		return 0, err
	}
	var firstErr error
	errs := make(chan error, 1)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			select {
			case errs <- err:
			default:
			}
		}
	}
	n := int64(0)
	for row := range g.Rows() {
		for i := range g.Generators() {
			if row >= g.Count(i) {
				continue
			}
			e, ts := g.Event(i, row)
			cl.Produce(ctx, &kgo.Record{
				Topic:     topic,
				Partition: int32(i % parts),
				Key:       binary.BigEndian.AppendUint64(nil, uint64(g.EventID(i, row))),
				Value:     model.AppendEvent(nil, e),
				Timestamp: time.UnixMilli(ts),
			}, done)
			n++
		}
		select {
		case firstErr = <-errs:
			return n, fmt.Errorf("producing to %s: %w", topic, firstErr)
		default:
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return n, err
	}
	select {
	case firstErr = <-errs:
		return n, fmt.Errorf("producing to %s: %w", topic, firstErr)
	default:
	}
	return n, nil
}

// ensureTopic creates topic with partitions partitions unless it exists,
// and returns how many partitions it has.
func ensureTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int) (int, error) {
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, fmt.Errorf("creating topic %s: %w", topic, err)
	}
	if err == nil && resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
		return 0, fmt.Errorf("creating topic %s: %w", topic, resp.Err)
	}
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("describing topic %s: %w", topic, err)
	}
	d, ok := details[topic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return 0, fmt.Errorf("topic %s has no partitions (%v)", topic, d.Err)
	}
	return len(d.Partitions), nil
}
