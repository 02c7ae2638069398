package queries_test

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/queries"
)

// testConfig is a small input on which every query has results: 8,000
// events of ten generators over four seconds of event time, in windows
// of two seconds (sliding every second), so that windows, sessions and
// joins have several of each.
func testConfig() config.Config {
	c := config.Default()
	c.NumEvents, c.NumEventGenerators, c.SourceSplits = 8000, 10, 4
	c.FirstEventRate, c.NextEventRate = 2000, 2000
	c.WindowSizeSec, c.WindowPeriodSec = 2, 1
	return c
}

// TestQueriesWeirPrismAndModels runs every query in batch on weir and on
// Prism over the same events and checks that weir's results are the
// model's (models_test.go) and Prism's are weir's, as multisets (for
// queries 6 and 12, whose panes depend on timing, after their
// normalisation).
func TestQueriesWeirPrismAndModels(t *testing.T) {
	crossCheck(t, false)
}

// TestQueriesStreaming does the same with the generator as an unbounded
// source with a watermark. It makes no late data, so every query must
// give its batch results. Prism's streaming runs are the slow half of this
// package's time (query 7 alone takes Prism seconds where weir takes a
// tenth of one), so they run only when WEIR_NEXMARK_PRISM_STREAMING=1 is
// set; weir's are checked against the models in every run.
func TestQueriesStreaming(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the batch runs cover the queries")
	}
	crossCheck(t, true)
}

// prismStreaming reports whether the streaming check runs Prism too.
func prismStreaming() bool { return os.Getenv("WEIR_NEXMARK_PRISM_STREAMING") == "1" }

// prismRefuses names the queries Prism refuses at submission, and what it
// says: query 11's repeated count trigger on merging (session) windows.
var prismRefuses = map[string]string{
	"11": "merging windows",
}

// prismVaries names the queries whose results on Prism now and then differ
// from weir's and the model's under load: WinningBids' (queries 4, 6, 9).
// Weir's match the model on every run. Prism, once in a few loaded runs,
// loses or misjudges one auction (seen: query 4 twice and query 6 once,
// one value differing; query 9 once, the first auction's winning bid
// missing, and in make bench-nexmark 3,492 results where weir and the
// model have 3,493). Why is not established; a watermark that Prism moves
// while splits of the source still run would do it (a bid turns late).
// A difference there is logged, not failed, so that make test does not
// fail on Prism's timing.
var prismVaries = map[string]bool{"4": true, "6": true, "9": true}

func crossCheck(t *testing.T, streaming bool) {
	cfg := testConfig()
	evs := allEvents(cfg)
	for _, name := range queries.Names() {
		t.Run("query"+name, func(t *testing.T) {
			q, err := queries.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			want := models[name](cfg, evs)
			sort.Strings(want)
			if len(want) == 0 {
				t.Fatal("the model has no results: the input is too small to test the query")
			}
			got, err := run(t, "weir", q, cfg, streaming)
			if err != nil {
				t.Fatalf("weir: %v", err)
			}
			if d := diff(got, want); d != "" {
				t.Errorf("weir against the model: %s", d)
			}
			if streaming && !prismStreaming() {
				return
			}
			onPrism, err := run(t, "prism", q, cfg, streaming)
			if why, ok := prismRefuses[name]; ok {
				if err == nil || !strings.Contains(err.Error(), why) {
					t.Errorf("Prism ran query %s (err %v); it used to refuse it for %q: compare it now", name, err, why)
				}
				return
			}
			if err != nil {
				t.Fatalf("prism: %v", err)
			}
			switch d := diff(onPrism, got); {
			case d == "":
			case prismVaries[name]:
				t.Logf("Prism against weir (Prism's timing, see prismVaries): %s", d)
			default:
				t.Errorf("Prism against weir: %s", d)
			}
		})
	}
}

// TestRateLimitedStreamDeliversEveryEvent runs query 0 over a paced
// stream that holds back a fifth of its events by up to a second behind
// the watermark: late, but query 0 keeps them all (the global window has
// no end), so each runner must print every event once.
func TestRateLimitedStreamDeliversEveryEvent(t *testing.T) {
	cfg := testConfig()
	cfg.NumEvents, cfg.FirstEventRate, cfg.NextEventRate = 3000, 10000, 10000
	cfg.IsRateLimited, cfg.ProbDelayedEvent, cfg.OccasionalDelaySec = true, 0.2, 1
	want := models["0"](cfg, allEvents(cfg))
	sort.Strings(want)
	q, _ := queries.Lookup("0")
	for _, r := range []string{"weir", "prism"} {
		got, err := run(t, r, q, cfg, true)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		if d := diff(got, want); d != "" {
			t.Errorf("%s: %s", r, d)
		}
	}
}
