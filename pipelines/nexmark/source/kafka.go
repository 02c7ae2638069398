package source

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/generator"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

func init() {
	register.Function3x1(decodeRecord)
	register.Emitter1[model.Event]()
}

// Kafka adds a read of the events a producer (pipelines/nexmark/produce)
// wrote to cfg's topics: weir's native Kafka source (package kafkaio;
// other runners refuse it), each record at its create time, which the
// producer sets to the event's time, decoded with model.DecodeEvent. Set
// cfg.MaxRecords to read a known number of events and end. A record that
// is not an event fails the job, naming its bytes' length and the error.
func Kafka(s beam.Scope, cfg kafkaio.ReadConfig) beam.PCollection {
	s = s.Scope("nexmark.ReadKafka")
	if cfg.TimestampPolicy == "" {
		cfg.TimestampPolicy = kafkaio.TimeCreate
	}
	recs := kafkaio.Read(s, cfg)
	return beam.ParDo(s, decodeRecord, recs)
}

func decodeRecord(_, value []byte, emit func(model.Event)) error {
	e, err := model.DecodeEvent(value)
	if err != nil {
		return fmt.Errorf("nexmark: a Kafka record of %d bytes is not an event: %w", len(value), err)
	}
	emit(e)
	return nil
}

// OutOfOrdernessMillis is the out-of-orderness bound of a Kafka read of
// the events of cfg as the producer writes them (each generator's events
// in order, to partition generator mod partitions).
func OutOfOrdernessMillis(cfg config.Config) int64 {
	g, err := generator.New(cfg)
	if err != nil {
		return 0
	}
	return g.OutOfOrdernessMillis()
}
