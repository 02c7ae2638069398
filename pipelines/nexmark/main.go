// Command nexmark runs one of Nexmark's queries (package queries) over
// the events of Beam's Nexmark generator (package generator) on any Go
// runner, and prints how fast:
//
//	go run ./pipelines/nexmark --runner=weir --query=5 --num_events=1000000
//	go run ./pipelines/nexmark --runner=prism --query=3 --streaming
//	go run ./pipelines/nexmark --runner=universal --endpoint=localhost:8099 --query=7
//
// Events come from the generator as a bounded source (batch, the default),
// as an unbounded one (--streaming; --is_rate_limited paces it), or from a
// Kafka topic that pipelines/nexmark/produce filled (--source=kafka; weir
// only, through its native Kafka source). Results go to a counting sink.
// The last line of output is machine-readable:
//
//	nexmark query=5 mode=batch events=1000000 results=3868 seconds=9.81 events_per_second=101936
//
// seconds is the job's, from submission to the end of the run, as the
// client sees it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism" // registers --runner=prism
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/queries"
	"github.com/weir-runner/weir/pipelines/nexmark/source"
	_ "github.com/weir-runner/weir/runner" // registers --runner=weir
)

var (
	query      = flag.String("query", "0", "query to run: "+strings.Join(queries.Names(), ", "))
	streaming  = flag.Bool("streaming", false, "generate events as an unbounded source, with a watermark")
	sourceKind = flag.String("source", "generator", "where events come from: generator, or kafka (weir only)")
	brokers    = flag.String("kafka_brokers", "localhost:9092", "--source=kafka: bootstrap servers, comma-separated")
	topic      = flag.String("kafka_topic", "nexmark", "--source=kafka: the topic pipelines/nexmark/produce filled")
	q10Dir     = flag.String("query10_dir", "", "query 10: folder for its log and index files (none if empty)")
)

func main() {
	cfg := config.Default()
	cfg.AddFlags(flag.CommandLine)
	flag.Parse()
	beam.Init()
	if err := run(context.Background(), cfg); err != nil {
		log.Fatalf("nexmark: %v", err)
	}
}

func run(ctx context.Context, cfg config.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	q, err := queries.Lookup(*query)
	if err != nil {
		return err
	}
	queries.Query10Dir = *q10Dir
	p, s := beam.NewPipelineWithRoot()
	events, mode, err := readEvents(s, cfg)
	if err != nil {
		return err
	}
	queries.CountResults(s, q.Build(s, cfg, events))
	start := time.Now()
	res, err := beamx.RunWithMetrics(ctx, p)
	if err != nil {
		return fmt.Errorf("query %s: %w", q.Name, err)
	}
	elapsed := time.Since(start)
	results := int64(-1) // unknown: the runner reported no metrics
	if res != nil {
		if c := res.Metrics().Query(func(r beam.MetricResult) bool {
			return r.Namespace() == "nexmark" && r.Name() == "results"
		}).Counters(); len(c) > 0 {
			results = 0
			for _, r := range c {
				results += r.Result()
			}
		}
	}
	fmt.Printf("nexmark query=%s mode=%s events=%d results=%d seconds=%.2f events_per_second=%.0f\n",
		q.Name, mode, cfg.NumEvents, results, elapsed.Seconds(), float64(cfg.NumEvents)/elapsed.Seconds())
	return nil
}

func readEvents(s beam.Scope, cfg config.Config) (beam.PCollection, string, error) {
	switch *sourceKind {
	case "generator":
		if *streaming {
			return source.Unbounded(s, cfg), "streaming", nil
		}
		return source.Bounded(s, cfg), "batch", nil
	case "kafka":
		if cfg.NumEvents == 0 {
			return beam.PCollection{}, "", fmt.Errorf("--source=kafka needs --num_events: how many records to read")
		}
		return source.Kafka(s, kafkaio.ReadConfig{
			BootstrapServers:        strings.Split(*brokers, ","),
			Topics:                  []string{*topic},
			MaxOutOfOrdernessMillis: source.OutOfOrdernessMillis(cfg),
			MaxRecords:              cfg.NumEvents,
		}), "kafka", nil
	}
	return beam.PCollection{}, "", fmt.Errorf("--source=%q: want generator or kafka", *sourceKind)
}
