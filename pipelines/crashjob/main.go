// Command crashjob is the pipeline of weir's crash test (crash_test.go):
// Kafka records "key,n" stamped with their create time, summed per key in
// one-minute event-time windows with allowed lateness, and written exactly
// once to a Kafka topic (--out_topic) or to files (--out_dir), as
// "key|window start in Unix ms|sum", or to a PostgreSQL table (--pg,
// --pg_table) as rows (key, window_start, sum).
//
// The test kills it with SIGKILL at random moments and starts it again
// with the same job name and checkpoint folder; the job must resume from
// its last completed checkpoint so that the output holds every window's
// sum exactly once.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/pgio"
	_ "github.com/weir-runner/weir/runner" // registers --runner=weir
)

var (
	brokers  = flag.String("brokers", "", "Kafka bootstrap servers, comma separated")
	inTopic  = flag.String("in_topic", "in", "topic of the input records")
	outTopic = flag.String("out_topic", "", "topic the window sums go to, exactly once")
	outDir   = flag.String("out_dir", "", "folder the window sums go to, exactly once (instead of --out_topic)")
	txnID    = flag.String("transactional_id", "crashjob", "transactional id prefix of the Kafka sink")
	pg       = flag.String("pg", "", "PostgreSQL connection string: the window sums go to --pg_table, exactly once (instead of --out_topic)")
	pgTable  = flag.String("pg_table", "window_sums", "table (key text, window_start bigint, sum bigint) of the sums with --pg")
)

// windowSum is one window's sum of one key: a row of --pg_table.
type windowSum struct {
	Key         string `beam:"key"`
	WindowStart int64  `beam:"window_start"`
	Sum         int64  `beam:"sum"`
}

// parse turns "key,n" into (key, n); records without a comma are markers
// that only move the watermark, and are dropped.
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

func (*formatFn) ProcessElement(w beam.Window, k string, sum int) string {
	iw := w.(window.IntervalWindow)
	return fmt.Sprintf("%s|%d|%d", k, iw.Start.Milliseconds(), sum)
}

type rowFn struct{}

func (*rowFn) ProcessElement(w beam.Window, k string, sum int) windowSum {
	return windowSum{Key: k, WindowStart: w.(window.IntervalWindow).Start.Milliseconds(), Sum: int64(sum)}
}

func toKV(s string) ([]byte, []byte) {
	k, _, _ := strings.Cut(s, "|")
	return []byte(k), []byte(s)
}

func init() {
	register.Function3x0(parse)
	register.DoFn3x1[beam.Window, string, int, string](&formatFn{})
	register.DoFn3x1[beam.Window, string, int, windowSum](&rowFn{})
	register.Function1x2(toKV)
	register.Emitter2[string, int]()
}

func main() {
	flag.Parse()
	beam.Init()
	outs := 0
	for _, o := range []string{*outTopic, *outDir, *pg} {
		if o != "" {
			outs++
		}
	}
	if *brokers == "" || outs != 1 {
		log.Fatal("crashjob: --brokers and exactly one of --out_topic, --out_dir and --pg are required")
	}
	p, s := beam.NewPipelineWithRoot()
	recs := kafkaio.Read(s, kafkaio.ReadConfig{
		BootstrapServers: strings.Split(*brokers, ","),
		Topics:           []string{*inTopic},
		Start:            kafkaio.StartEarliest,
		TimestampPolicy:  kafkaio.TimeCreate,
	})
	kvs := beam.ParDo(s, parse, recs)
	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Minute), kvs,
		beam.AllowedLateness(time.Minute))
	sums := stats.SumPerKey(s, windowed)
	if *pg != "" {
		// Insert, not upsert, into a table without a key: a window written
		// twice would show as two rows.
		pgio.Write(s, pgio.WriteConfig{Connection: *pg, Table: *pgTable}, beam.ParDo(s, &rowFn{}, sums))
		run(p)
		return
	}
	lines := beam.ParDo(s, &formatFn{}, sums)
	if *outDir != "" {
		fileio.Write(s, fileio.WriteConfig{Dir: *outDir, Suffix: ".txt"}, lines)
	} else {
		kafkaio.Write(s, kafkaio.WriteConfig{
			BootstrapServers: strings.Split(*brokers, ","),
			Topic:            *outTopic,
			Semantic:         kafkaio.ExactlyOnce,
			TransactionalID:  *txnID,
		}, beam.ParDo(s, toKV, lines))
	}
	run(p)
}

func run(p *beam.Pipeline) {
	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatalf("crashjob: %v", err)
	}
}
