// Command adclicks is the ad-click aggregation worked example of
// watermarks.txt: clicks per campaign per one-minute window, computed twice
// from one stream.
//
//   - The dashboard path fires each window once, when the watermark (the
//     arrival clock minus a 45 s out-of-orderness bound) passes it, with no
//     allowed lateness: fast, and missing the clicks that arrive later.
//   - The billing path fires at the same moment, then re-fires on every
//     late click for 6 hours of allowed lateness, with accumulating panes,
//     into an upsert table keyed by campaign and window start, so each
//     re-fire overwrites the previous count.
//
// Clicks beyond 6 hours are dropped by both paths, counted in the
// weir/dropped_late_elements metric, reported in job messages and, with
// --weir_dead_letter=FILE, written there. The input is synthetic: a seeded
// generator of web clicks (under a second late), mobile clicks (sent in
// 30 s batches) and a few offline mobile clicks flushed hours later,
// replayed in arrival order by a TestStream.
//
// With --pg=CONNSTRING the billing panes also go to a PostgreSQL table
// (--pg_table, made if missing) through weir's exactly-once sink, as an
// upsert keyed by campaign and window start: the table ends as the
// printed billing table.
//
//	go run ./pipelines/adclicks --runner=weir
//	go run ./pipelines/adclicks --runner=weir --pg="$(make -s postgres)"
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	_ "github.com/weir-runner/weir/runner" // registers --runner=weir
)

var (
	seed    = flag.Uint64("seed", 1, "seed of the synthetic clicks")
	minutes = flag.Int("minutes", 5, "minutes of synthetic traffic")
	perMin  = flag.Int("clicks_per_minute", 120, "clicks per minute")
	pgConn  = flag.String("pg", "", "PostgreSQL connection string: the billing panes are upserted into --pg_table too")
	pgTable = flag.String("pg_table", "billing", "the billing table with --pg; made if missing")
)

const (
	bound    = 45 * time.Second // out-of-orderness bound: just past the p99 arrival delay
	lateness = 6 * time.Hour    // billing's allowed lateness
)

var campaigns = []string{"spring-sale", "shoes", "travel"}

// click is one synthetic click: its campaign, when it happened and when it
// reached the pipeline, in milliseconds from the start of the simulation.
type click struct {
	campaign       string
	event, arrival int64
}

// generate makes the synthetic clicks, sorted by arrival.
func generate(r *rand.Rand, minutes, perMin int) []click {
	var cs []click
	for i := range minutes * perMin {
		ev := int64(i)*60_000/int64(perMin) + r.Int64N(500)
		c := click{campaign: campaigns[r.IntN(len(campaigns))], event: ev}
		switch p := r.Float64(); {
		case p < 0.6: // web: under a second
			c.arrival = ev + r.Int64N(1000)
		case p < 0.995: // mobile SDK: batched every 30 s
			c.arrival = (ev/30_000+1)*30_000 + r.Int64N(2000)
		default: // offline mobile client: minutes to hours
			c.arrival = ev + int64(5*time.Minute/time.Millisecond) + r.Int64N(int64(5*time.Hour/time.Millisecond))
		}
		cs = append(cs, c)
	}
	// Two clients that stayed offline past the billing's allowed lateness.
	cs = append(cs, click{campaign: "shoes", event: 10_000, arrival: 10_000 + int64(6*time.Hour/time.Millisecond) + 30*60_000},
		click{campaign: "travel", event: 70_000, arrival: 70_000 + int64(7*time.Hour/time.Millisecond)})
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].arrival < cs[j].arrival })
	return cs
}

// replay turns clicks into a TestStream: each click at its event time, in
// arrival order, with processing time following arrivals and the watermark
// at the arrival clock minus the bound. With steady web traffic the largest
// event time seen tracks the clock within a second, so this is bounded
// out-of-orderness; after traffic stops it goes on following the clock, as
// an idle source's watermark would.
func replay(cs []click, start int64) teststream.Config {
	c := teststream.NewConfig()
	var clock, wm int64
	for _, k := range cs {
		if k.arrival > clock {
			c.AdvanceProcessingTime(k.arrival - clock)
			clock = k.arrival
		}
		if w := start + clock - bound.Milliseconds(); w > wm {
			c.AdvanceWatermark(w)
			wm = w
		}
		c.AddElements(start+k.event, k.campaign)
	}
	return c
}

func withOne(campaign string) (string, int) { return campaign, 1 }

// row counts a window's clicks of one campaign and formats them with the
// pane, for the printed tables. (It counts the grouped values itself: the
// Go SDK's combiners do not pass pane info on.)
func row(pn beam.PaneInfo, w beam.Window, campaign string, ones func(*int) bool) string {
	n, one := 0, 0
	for ones(&one) {
		n += one
	}
	start := w.(window.IntervalWindow).Start.ToTime().UTC().Format("15:04")
	return fmt.Sprintf("%s|%s|%d|%s|%d", campaign, start, n, pn.Timing, pn.Index)
}

// collect gathers a PCollection into one slice, printed by main.
func collect(_ []byte, rows func(*string) bool, emit func([]string)) {
	var all []string
	var s string
	for rows(&s) {
		all = append(all, s)
	}
	emit(all)
}

func printDashboard(rows []string) {
	sort.Strings(rows)
	fmt.Println("dashboard (45 s bound, no lateness; each window fires once):")
	for _, r := range rows {
		f := strings.Split(r, "|")
		fmt.Printf("  %-12s %s  %4s clicks  (%s)\n", f[0], f[1], f[2], f[3])
	}
}

// printBilling applies the billing panes to an upsert table keyed by
// (campaign, window start): the pane with the highest index wins.
func printBilling(rows []string) {
	type cell struct {
		count, index, panes int
		timing              string
	}
	table := map[string]*cell{}
	for _, r := range rows {
		f := strings.Split(r, "|")
		var n, idx int
		fmt.Sscan(f[2], &n)
		fmt.Sscan(f[4], &idx)
		k := f[0] + "|" + f[1]
		c := table[k]
		if c == nil {
			c = &cell{index: -1}
			table[k] = c
		}
		c.panes++
		if idx > c.index {
			c.count, c.index, c.timing = n, idx, f[3]
		}
	}
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println("billing (45 s bound, 6 h allowed lateness, accumulating; upsert by campaign and window start):")
	for _, k := range keys {
		f, c := strings.Split(k, "|"), table[k]
		fmt.Printf("  %-12s %s  %4d clicks  (%d pane(s), last %s)\n", f[0], f[1], c.count, c.panes, c.timing)
	}
}

func init() {
	register.Function4x1(row)
	register.Function4x1(billingRow)
	register.Function1x2(withOne)
	register.Iter1[int]()
	register.Function3x0(collect)
	register.Function1x0(printDashboard)
	register.Function1x0(printBilling)
	register.Emitter1[[]string]()
	register.Iter1[string]()
}

// countPerMinute windows clicks into minutes and groups each campaign's:
// the formatted rows in the global window, and the groups.
func countPerMinute(s beam.Scope, clicks beam.PCollection, opts ...beam.WindowIntoOption) (rows, grouped beam.PCollection) {
	keyed := beam.ParDo(s, withOne, beam.WindowInto(s, window.NewFixedWindows(time.Minute), clicks, opts...))
	grouped = beam.GroupByKey(s, keyed)
	return beam.WindowInto(s, window.NewGlobalWindows(), beam.ParDo(s, row, grouped)), grouped
}

func printAll(s beam.Scope, rows beam.PCollection, print any) {
	all := beam.ParDo(s, collect, beam.Impulse(s), beam.SideInput{Input: rows})
	beam.ParDo0(s, print, all)
}

func main() {
	flag.Parse()
	beam.Init()
	cs := generate(rand.New(rand.NewPCG(*seed, 0)), *minutes, *perMin)
	// Event times start at the real clock, where the runner's synthetic
	// processing time starts too, so arrival delays measure as generated.
	start := int64(mtime.Now())

	p, s := beam.NewPipelineWithRoot()
	clicks := teststream.Create(s, replay(cs, start))

	dash := s.Scope("Dashboard")
	dashRows, _ := countPerMinute(dash, clicks)
	printAll(dash, dashRows, printDashboard)

	bill := s.Scope("Billing")
	billRows, billGroups := countPerMinute(bill, clicks,
		beam.Trigger(trigger.AfterEndOfWindow().LateFiring(trigger.Repeat(trigger.AfterCount(1)))),
		beam.AllowedLateness(lateness), beam.PanesAccumulate())
	printAll(bill, billRows, printBilling)
	if *pgConn != "" {
		if err := makeBillingTable(*pgConn, *pgTable); err != nil {
			log.Fatalf("adclicks: %v", err)
		}
		writeBilling(bill, *pgConn, *pgTable, billGroups)
	}

	res, err := beamx.RunWithMetrics(context.Background(), p)
	if err != nil {
		log.Fatalf("adclicks: %v", err)
	}
	fmt.Printf("%d clicks replayed; weir's metrics per group-by-key (the job messages name them):\n", len(cs))
	q := res.Metrics().Query(func(r beam.MetricResult) bool { return r.Namespace() == "weir" })
	var lines []string
	for _, c := range q.Counters() {
		lines = append(lines, fmt.Sprintf("  %s %s = %d", c.Key.Step, c.Key.Name, c.Committed))
	}
	for _, g := range q.Gauges() {
		lines = append(lines, fmt.Sprintf("  %s %s = %v", g.Key.Step, g.Key.Name, time.Duration(g.Committed.Value)*time.Millisecond))
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
	if *pgConn != "" {
		if err := printBillingTable(*pgConn, *pgTable); err != nil {
			log.Fatalf("adclicks: %v", err)
		}
	}
}
