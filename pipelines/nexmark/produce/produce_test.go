package main

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/queries"
	"github.com/weir-runner/weir/pipelines/nexmark/source"
	"github.com/weir-runner/weir/runner"
)

func TestMain(m *testing.M) {
	beam.Init()
	os.Exit(m.Run())
}

func init() { beam.RegisterType(reflect.TypeOf((*collectFn)(nil)).Elem()) }

var (
	mu        sync.Mutex
	collected = map[string][]string{}
)

type collectFn struct{ Run string }

func (fn *collectFn) ProcessElement(x beam.T) {
	mu.Lock()
	defer mu.Unlock()
	collected[fn.Run] = append(collected[fn.Run], fmt.Sprint(x))
}

// TestKafkaRoundTrip fills a topic of a kfake broker with Produce and
// runs queries 0 (every event) and 5 (sliding windows, which need the
// Kafka source's watermark to hold back until each window is complete)
// on weir from it, and from the generator directly: the results must be
// the same.
func TestKafkaRoundTrip(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := config.Default()
	cfg.NumEvents, cfg.NumEventGenerators, cfg.OutOfOrderGroupSize = 5000, 6, 5
	cfg.FirstEventRate, cfg.NextEventRate, cfg.WindowSizeSec, cfg.WindowPeriodSec = 1000, 1000, 2, 1
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, err := Produce(ctx, cfg, c.ListenAddrs(), "events", 4)
	if err != nil || n != cfg.NumEvents {
		t.Fatalf("produced %d events, error %v; want %d", n, err, cfg.NumEvents)
	}
	for _, name := range []string{"0", "5"} {
		q, err := queries.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		fromKafka := runQuery(ctx, t, q, cfg, func(s beam.Scope) beam.PCollection {
			return source.Kafka(s, kafkaio.ReadConfig{BootstrapServers: c.ListenAddrs(), Topics: []string{"events"},
				MaxOutOfOrdernessMillis: source.OutOfOrdernessMillis(cfg), MaxRecords: cfg.NumEvents})
		})
		direct := runQuery(ctx, t, q, cfg, func(s beam.Scope) beam.PCollection { return source.Bounded(s, cfg) })
		if len(direct) == 0 || !reflect.DeepEqual(fromKafka, direct) {
			t.Errorf("query %s: %d results from Kafka, %d from the generator; they differ", name, len(fromKafka), len(direct))
		}
	}
}

func runQuery(ctx context.Context, t *testing.T, q queries.Query, cfg config.Config, read func(beam.Scope) beam.PCollection) []string {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	id := fmt.Sprintf("%s-%p", q.Name, p)
	beam.ParDo0(s, &collectFn{Run: id}, q.Build(s, cfg, read(s)))
	if _, err := runner.Execute(ctx, p); err != nil {
		t.Fatalf("query %s: %v", q.Name, err)
	}
	mu.Lock()
	defer mu.Unlock()
	out := collected[id]
	sort.Strings(out)
	return out
}
