// Command soakjob is the streaming job of weir's soak run
// (pipelines/soak, `make soak`). It reads "n" records keyed by a word
// from Kafka, stamped with their create time, with bounded
// out-of-orderness and idleness; counts and sums them per key in 10 s
// event-time windows that fire early every 2 s of processing time, on
// time, and once per late record for 30 s of allowed lateness, with
// accumulating panes; numbers each key-window's panes in a stateful step
// (a value state per key and window, collected when the window expires);
// and writes every pane exactly once to a Kafka topic as
// "window start ms|count|sum|pane number|timing|pane index", keyed by the
// key. The last two are the PaneInfo the step sees, which after the Go
// SDK's combine is always EARLY and 0 (exec.Combine drops it), so the
// driver does not read them; they stay so that a runner or SDK that keeps
// PaneInfo shows it in the output.
//
// The soak driver submits it to `weir serve` with --runner=universal and
// a LOOPBACK worker, so this process is the job's SDK worker, and checks
// its output: for each key-window the pane numbers 1..N each once, and
// the pane numbered N (accumulating) holding the count and sum of exactly
// what was produced.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/weir-runner/weir/kafkaio"
	_ "github.com/weir-runner/weir/runner" // declares the --weir_* job options
)

var (
	brokers  = flag.String("brokers", "", "Kafka bootstrap servers, comma separated")
	inTopic  = flag.String("in_topic", "", "topic of the input records")
	outTopic = flag.String("out_topic", "", "topic the panes go to, exactly once")
	txnID    = flag.String("transactional_id", "soakjob", "transactional id prefix of the Kafka sink")
)

// The job's event-time settings; the soak driver's producer keeps its
// late records within them, so that no record is dropped.
const (
	Window         = 10 * time.Second
	EarlyEvery     = 2 * time.Second
	Lateness       = 30 * time.Second
	OutOfOrderness = 3 * time.Second
	IdleTimeout    = 5 * time.Second
)

// Agg is a key-window's count and sum, the combine's accumulator and
// output.
type Agg struct {
	Count, Sum int64
}

// aggFn counts and sums.
type aggFn struct{}

func (aggFn) CreateAccumulator() Agg         { return Agg{} }
func (aggFn) AddInput(a Agg, n int64) Agg    { return Agg{a.Count + 1, a.Sum + n} }
func (aggFn) MergeAccumulators(a, b Agg) Agg { return Agg{a.Count + b.Count, a.Sum + b.Sum} }
func (aggFn) ExtractOutput(a Agg) Agg        { return a }

// parse turns a record into (key, n); a record whose value is not a
// number is dropped (the driver writes none).
func parse(k, v []byte, emit func(string, int64)) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return
	}
	emit(string(k), n)
}

// paneFn numbers each key-window's panes: its value state, one per key and
// window, counts the panes seen; the runner collects it when the window
// expires.
type paneFn struct {
	Panes state.Value[int64]
}

func (fn *paneFn) ProcessElement(pn beam.PaneInfo, w beam.Window, sp state.Provider, key string, a Agg, emit func([]byte, []byte)) error {
	n, _, err := fn.Panes.Read(sp)
	if err != nil {
		return fmt.Errorf("reading the pane count of %q: %w", key, err)
	}
	n++
	if err := fn.Panes.Write(sp, n); err != nil {
		return fmt.Errorf("writing the pane count of %q: %w", key, err)
	}
	start := w.(window.IntervalWindow).Start.Milliseconds()
	emit([]byte(key), []byte(fmt.Sprintf("%d|%d|%d|%d|%s|%d", start, a.Count, a.Sum, n, pn.Timing, pn.Index)))
	return nil
}

func init() {
	register.Function3x0(parse)
	register.Combiner3[Agg, int64, Agg](&aggFn{})
	register.DoFn6x1[beam.PaneInfo, beam.Window, state.Provider, string, Agg, func([]byte, []byte), error](&paneFn{})
	register.Emitter2[string, int64]()
	register.Emitter2[[]byte, []byte]()
	beam.RegisterType(reflect.TypeOf((*Agg)(nil)).Elem())
}

func main() {
	flag.Parse()
	beam.Init()
	if *brokers == "" || *inTopic == "" || *outTopic == "" {
		log.Fatal("soakjob: --brokers, --in_topic and --out_topic are required")
	}
	servers := strings.Split(*brokers, ",")
	p, s := beam.NewPipelineWithRoot()
	recs := kafkaio.Read(s, kafkaio.ReadConfig{
		BootstrapServers:        servers,
		Topics:                  []string{*inTopic},
		TimestampPolicy:         kafkaio.TimeCreate,
		MaxOutOfOrdernessMillis: OutOfOrderness.Milliseconds(),
		IdleTimeoutMillis:       IdleTimeout.Milliseconds(),
	})
	windowed := beam.WindowInto(s, window.NewFixedWindows(Window), beam.ParDo(s, parse, recs),
		beam.Trigger(trigger.AfterEndOfWindow().
			EarlyFiring(trigger.AfterProcessingTime().PlusDelay(EarlyEvery)).
			LateFiring(trigger.AfterCount(1))),
		beam.AllowedLateness(Lateness), beam.PanesAccumulate())
	aggs := beam.CombinePerKey(s, &aggFn{}, windowed)
	kafkaio.Write(s, kafkaio.WriteConfig{
		BootstrapServers: servers,
		Topic:            *outTopic,
		Semantic:         kafkaio.ExactlyOnce,
		TransactionalID:  *txnID,
	}, beam.ParDo(s, &paneFn{}, aggs))
	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatalf("soakjob: %v", err)
	}
}
