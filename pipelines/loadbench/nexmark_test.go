package main

import (
	"strings"
	"testing"
	"time"
)

func TestNexmarkLine(t *testing.T) {
	out := "lots of logs\nnexmark query=5 mode=batch events=1000 results=12 seconds=2.50 events_per_second=400\n"
	m := nexmarkLine.FindStringSubmatch(out)
	if m == nil || m[1] != "12" || m[2] != "2.50" {
		t.Fatalf("parsed %q", m)
	}
}

// TestNexmarkTable renders medians, the ratio, a refusal, a partial
// row and differing result counts.
func TestNexmarkTable(t *testing.T) {
	*nexmarkEvents = 1000
	ok := func(secs float64, results int64, cpu time.Duration, kb int64) nexmarkResult {
		return nexmarkResult{sample: sample{serverCPU: cpu, serverKB: kb, clientKB: 2048}, events: 1000, seconds: secs, results: results}
	}
	res := map[string]map[string][]nexmarkResult{
		"5": {
			"weir":  {ok(1, 7, time.Second, 10240), ok(2, 7, 3*time.Second, 20480), ok(4, 7, 2*time.Second, 30720)},
			"prism": {ok(4, 7, 9*time.Second, 102400), ok(5, 7, 9*time.Second, 102400), ok(8, 7, 9*time.Second, 102400)},
		},
		"11": {
			"weir":  {ok(1, 3, time.Second, 1024)},
			"prism": {{failed: "refused: merging windows"}},
		},
		"12": {
			"weir":  {ok(1, 3, time.Second, 1024), {failed: "stopped after 1m0s"}},
			"prism": {ok(1, 4, time.Second, 1024)},
		},
	}
	got := nexmarkTable([]string{"5", "11", "12"}, runners, res)
	for _, want := range []string{
		"| 5 | 500 | 200 | 2.50x | 2.0 s | 9.0 s | 20 MB | 100 MB | 2 / 2 MB | 7 |",
		"| 11 | 1000 | refused: merging windows | - | 1.0 s | - | 1 MB | - | 2 / - MB | 3 |",
		"| 12 | 1000 (1 of 2 runs) | 1000 | 1.00x |",
		"weir 3; prism 4 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

func TestRefusal(t *testing.T) {
	msg := `client: exit status 1
... job failed to prepare\\n\\tcaused by:\\nrpc error: code = Unknown desc = found 1 uses of features unimplemented in prism in job j:\\nunsupported feature \"WindowingStrategy: Using stateful triggers with merging windows isn't currently supported in prism. See https://github.com/apache/beam/issues/31438 for information.\" set with value window_fn: {...}`
	if got, want := refusal(msg), "Using stateful triggers with merging windows isn't currently supported in prism"; got != want {
		t.Errorf("refusal %q, want %q", got, want)
	}
}
