package queries_test

import (
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
// give its batch results.
func TestQueriesStreaming(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the batch runs cover the queries")
	}
	crossCheck(t, true)
}

// prismRefuses names the queries Prism refuses at submission, and what it
// says: query 11's repeated count trigger on merging (session) windows.
var prismRefuses = map[string]string{
	"11": "merging windows",
}

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
			if d := diff(onPrism, got); d != "" {
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
