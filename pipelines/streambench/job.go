package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/weir-runner/weir/kafkaio"
	_ "github.com/weir-runner/weir/runner" // registers --runner=weir
)

// The measured job: Kafka records "key,n" at their create time (the
// producer's clock), summed per key in fixed one-second event-time
// windows, written exactly once to the output topic as
// "key|window start in Unix ms|sum". Runner and SDK worker share this
// process (--runner=weir), so its CPU time is the whole job's.

// parse turns "key,n" into (key, n); anything else is dropped.
func parse(_ []byte, v []byte, emit func(string, int)) {
	k, n, ok := strings.Cut(string(v), ",")
	if !ok {
		return
	}
	i, err := strconv.Atoi(n)
	if err != nil {
		return
	}
	emit(k, i)
}

type formatFn struct{}

func (*formatFn) ProcessElement(w beam.Window, k string, sum int) ([]byte, []byte) {
	return []byte(k), fmt.Appendf(nil, "%s|%d|%d", k, w.(window.IntervalWindow).Start.Milliseconds(), sum)
}

func init() {
	register.Function3x0(parse)
	register.DoFn3x2[beam.Window, string, int, []byte, []byte](&formatFn{})
	register.Emitter2[string, int]()
}

// runJob runs the job until it is killed.
func runJob(ctx context.Context) error {
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	recs := kafkaio.Read(s, kafkaio.ReadConfig{
		BootstrapServers: strings.Split(*brokers, ","),
		Topics:           []string{*inTopic},
		Start:            kafkaio.StartEarliest,
		TimestampPolicy:  kafkaio.TimeCreate,
	})
	kvs := beam.ParDo(s, parse, recs)
	windowed := beam.WindowInto(s, window.NewFixedWindows(*windowSize), kvs)
	sums := stats.SumPerKey(s, windowed)
	kafkaio.Write(s, kafkaio.WriteConfig{
		BootstrapServers: strings.Split(*brokers, ","),
		Topic:            *outTopic,
		Semantic:         kafkaio.ExactlyOnce,
		TransactionalID:  *outTopic,
	}, beam.ParDo(s, &formatFn{}, sums))
	return beamx.Run(ctx, p)
}

// windowEnd is the end of the window that starts at start.
func windowEnd(startMillis int64) time.Time {
	return time.UnixMilli(startMillis).Add(*windowSize)
}
