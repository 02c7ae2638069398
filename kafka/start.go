package kafka

import (
	"time"

	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/kafkaio"
)

// partition is one partition a reader consumes.
type partition struct {
	topic string
	id    int32
	start int64 // the first offset read
	next  int64 // the next offset to deliver: records before it are emitted
	high  int64 // the high watermark at the last fetch; -1 before one
	// last is the broker timestamp of the last record delivered; read
	// counts the records delivered.
	last time.Time
	read int64
	// held are records fetched but held back by alignment, in offset
	// order, all at or after next (Reader.release): at most what one poll
	// fetched, since the partition is paused for fetching while it has
	// any. Only with an alignment group.
	held []heldRecord
	// skipTo is the offset after the last transaction marker fetched:
	// next moves there once every record before it is delivered.
	skipTo int64
	// stop is the offset the partition ends at (kafkaio.StopLatest), -1
	// for none (Reader.endStopped).
	stop int64
}

// skip moves next past the transaction markers fetched, unless records
// before them are still held.
func (p *partition) skip() {
	if len(p.held) == 0 && p.skipTo > p.next {
		p.next = p.skipTo
	}
}

// heldRecord is a fetched record the reader has not delivered yet.
type heldRecord struct {
	rec *kgo.Record
	t   mtime.Time // its event time, assigned when fetched
}

// errNoTopic is the cause when a configured topic does not exist.
var errNoTopic = errors.New("topic does not exist")

// resolve lists every partition of the configured topics and its start
// offset, sorted by topic and partition. Every error names the source and
// the topic, and the partition where there is one.
func resolve(ctx context.Context, adm *kadm.Client, source string, cfg *kafkaio.ReadConfig, assign Assignment) ([]partition, error) {
	topics, err := adm.ListTopics(ctx, cfg.Topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka source %s: listing topics %v at %v: %w", source, cfg.Topics, cfg.BootstrapServers, err)
	}
	var parts []partition
	for _, t := range cfg.Topics {
		d, ok := topics[t]
		switch {
		case !ok:
			return nil, fmt.Errorf("kafka source %s: topic %q: %w", source, t, errNoTopic)
		case d.Err != nil:
			return nil, fmt.Errorf("kafka source %s: topic %q: %w", source, t, d.Err)
		case len(d.Partitions) == 0:
			return nil, fmt.Errorf("kafka source %s: topic %q has no partitions", source, t)
		}
		for _, p := range d.Partitions {
			if assign.Owns(t, p.Partition) {
				parts = append(parts, partition{topic: t, id: p.Partition, high: -1, stop: -1})
			}
		}
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].topic != parts[j].topic {
			return parts[i].topic < parts[j].topic
		}
		return parts[i].id < parts[j].id
	})
	offsets, err := startOffsets(ctx, adm, source, cfg)
	if err != nil {
		return nil, err
	}
	for i := range parts {
		p := &parts[i]
		o, ok := offsets.Lookup(p.topic, p.id)
		switch {
		case !ok:
			return nil, fmt.Errorf("kafka source %s: topic %q partition %d: no %s offset listed", source, p.topic, p.id, startName(cfg))
		case o.Err != nil:
			return nil, fmt.Errorf("kafka source %s: topic %q partition %d: %s offset: %w", source, p.topic, p.id, startName(cfg), o.Err)
		case o.Offset < 0:
			return nil, fmt.Errorf("kafka source %s: topic %q partition %d: no %s offset (%d)", source, p.topic, p.id, startName(cfg), o.Offset)
		}
		p.start, p.next = o.Offset, o.Offset
	}
	return parts, nil
}

// startOffsets lists the start offset of every partition of the topics.
func startOffsets(ctx context.Context, adm *kadm.Client, source string, cfg *kafkaio.ReadConfig) (kadm.ListedOffsets, error) {
	var (
		listed kadm.ListedOffsets
		err    error
	)
	switch cfg.Start {
	case "", kafkaio.StartEarliest:
		listed, err = adm.ListStartOffsets(ctx, cfg.Topics...)
	case kafkaio.StartLatest:
		listed, err = adm.ListEndOffsets(ctx, cfg.Topics...)
	case kafkaio.StartTime:
		// The first offset at or after the time in every partition; the
		// end offset where nothing is that late yet.
		listed, err = adm.ListOffsetsAfterMilli(ctx, cfg.StartTimeMillis, cfg.Topics...)
	case kafkaio.StartCommitted:
		return committedOffsets(ctx, adm, source, cfg)
	default:
		return nil, fmt.Errorf("kafka source %s: unknown start %q", source, cfg.Start)
	}
	if err != nil {
		return nil, fmt.Errorf("kafka source %s: listing %s offsets of %v: %w", source, startName(cfg), cfg.Topics, err)
	}
	return listed, nil
}

// committedOffsets lists the consumer group's committed offsets. A
// partition without a commit starts where auto.offset.reset says, at the
// end by default, as a Kafka consumer would.
func committedOffsets(ctx context.Context, adm *kadm.Client, source string, cfg *kafkaio.ReadConfig) (kadm.ListedOffsets, error) {
	group := cfg.ConsumerConfig["group.id"]
	committed, err := adm.FetchOffsetsForTopics(ctx, group, cfg.Topics...)
	if errors.Is(err, kerr.GroupIDNotFound) {
		// A group that never committed: Kafka answers with no offsets,
		// kfake (and some brokers) with this error. Either way every
		// partition starts where auto.offset.reset says.
		committed, err = kadm.OffsetResponses{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kafka source %s: fetching the offsets group %q committed for %v: %w", source, group, cfg.Topics, err)
	}
	var fallback kadm.ListedOffsets
	if cfg.ConsumerConfig["auto.offset.reset"] == "earliest" {
		fallback, err = adm.ListStartOffsets(ctx, cfg.Topics...)
	} else {
		fallback, err = adm.ListEndOffsets(ctx, cfg.Topics...)
	}
	if err != nil {
		return nil, fmt.Errorf("kafka source %s: listing offsets of %v for partitions group %q has not committed: %w", source, cfg.Topics, group, err)
	}
	out := kadm.ListedOffsets{}
	fallback.Each(func(l kadm.ListedOffset) {
		if c, ok := committed.Lookup(l.Topic, l.Partition); ok {
			if c.Err != nil {
				l.Err = c.Err
			} else if c.At >= 0 {
				l.Offset = c.At
			}
		}
		if out[l.Topic] == nil {
			out[l.Topic] = map[int32]kadm.ListedOffset{}
		}
		out[l.Topic][l.Partition] = l
	})
	return out, nil
}

func startName(cfg *kafkaio.ReadConfig) string {
	if cfg.Start == "" {
		return kafkaio.StartEarliest
	}
	return cfg.Start
}
