package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Nexmark (pipelines/nexmark) on weir and Prism: each query's events per
// second, the job server's CPU seconds and peak resident set, in batch
// and optionally streaming, alternating runners as the load tests do.
// `make bench-nexmark` runs it alone (-nexmark-only) and rewrites the
// "Nexmark" section of -out.
var (
	nexmarkOnly    = flag.Bool("nexmark-only", false, "run only the Nexmark queries, keeping the other sections of -out")
	nexmarkEvents  = flag.Int64("nexmark-events", 1000000, "events per Nexmark run")
	nexmarkQueries = flag.String("nexmark-queries", "0,1,2,3,4,5,6,7,8,9,10,11,12,bounded_side_input_join", "Nexmark queries to run")
	nexmarkRuns    = flag.Int("nexmark-runs", 3, "runs per Nexmark query, mode and runner")
	nexmarkModes   = flag.String("nexmark-modes", "batch", "batch, streaming (the generator unbounded, not paced), or both, comma-separated")
	nexmarkRunners = flag.String("nexmark-runners", "weir,prism", "runners to run Nexmark on")
	nexmarkTimeout = flag.Duration("nexmark-timeout", 20*time.Minute, "a Nexmark run longer than this is stopped and shown as such")
	nexmarkFewer   = flag.String("nexmark-events-for", "11=100000", "queries run over other numbers of events, as query=events, comma-separated "+
		"(query 11's session merging is quadratic on weir: docs/benchmarks.md)")
)

// nexmarkEventsFor is the number of events a run of query q reads.
func nexmarkEventsFor(q string) int64 {
	for _, kv := range nonEmpty(strings.Split(*nexmarkFewer, ",")) {
		name, n, ok := strings.Cut(kv, "=")
		if v, err := strconv.ParseInt(n, 10, 64); ok && err == nil && name == q {
			return v
		}
	}
	return *nexmarkEvents
}

const nexmarkHeading = "## Nexmark"

// nexmarkSection is the heading the run's table goes under: streaming
// runs alone get a section of their own, so that a batch table and a
// streaming one (often of other sizes) can stand side by side.
func nexmarkSection() string {
	if strings.TrimSpace(*nexmarkModes) == "streaming" {
		return nexmarkHeading + ", streaming"
	}
	return nexmarkHeading
}

// nexmarkResult is one run's outcome: a sample, or why there is none.
type nexmarkResult struct {
	sample
	events  int64
	results int64
	seconds float64 // the job's, as the client measured it
	failed  string  // "" if the run succeeded
}

var nexmarkLine = regexp.MustCompile(`nexmark query=\S+ mode=\S+ events=\d+ results=(-?\d+) seconds=([0-9.]+)`)

func nexmarkClient(mode string) func(ctx context.Context, query, addr string) *exec.Cmd {
	return func(ctx context.Context, query, addr string) *exec.Cmd {
		args := []string{"--runner=universal", "--endpoint=" + addr, "--environment_type=LOOPBACK",
			"--query=" + query, fmt.Sprintf("--num_events=%d", nexmarkEventsFor(query))}
		if mode == "streaming" {
			args = append(args, "--streaming")
		}
		return exec.CommandContext(ctx, filepath.Join(*bin, "nexmark"), args...)
	}
}

// runNexmark runs every query and mode -nexmark-runs times on each runner,
// alternating which goes first, and returns the rendered section.
func runNexmark(ctx context.Context) (string, error) {
	steps := [][]string{{"go", "build", "-o", filepath.Join(*bin, "nexmark"), "./pipelines/nexmark"}}
	for _, s := range steps {
		cmd := exec.CommandContext(ctx, s[0], s[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("%s: %w", strings.Join(s, " "), err)
		}
	}
	var rns []runner
	for _, name := range nonEmpty(strings.Split(*nexmarkRunners, ",")) {
		found := false
		for _, r := range runners {
			if r.name == name {
				rns, found = append(rns, r), true
			}
		}
		if !found {
			return "", fmt.Errorf("-nexmark-runners: no runner %q", name)
		}
	}
	queries := nonEmpty(strings.Split(*nexmarkQueries, ","))
	modes := nonEmpty(strings.Split(*nexmarkModes, ","))
	loadBefore := loadAverage()
	start := time.Now()
	res := map[string]map[string][]nexmarkResult{} // row -> runner -> runs
	for r := range *nexmarkRuns {
		for _, mode := range modes {
			for _, q := range queries {
				row := nexmarkRow(q, mode)
				order := rns
				if r%2 == 1 {
					order = reversed(rns)
				}
				for _, rn := range order {
					out := nexmarkOnce(ctx, rn, q, mode)
					log.Printf("nexmark %s on %s, run %d: %s", row, rn.name, r+1, out.describe())
					if res[row] == nil {
						res[row] = map[string][]nexmarkResult{}
					}
					res[row][rn.name] = append(res[row][rn.name], out)
				}
			}
		}
	}
	var rows []string
	for _, mode := range modes {
		for _, q := range queries {
			rows = append(rows, nexmarkRow(q, mode))
		}
	}
	return nexmarkHeader(loadBefore, loadAverage(), time.Since(start)) + nexmarkTable(rows, rns, res), nil
}

func nexmarkRow(query, mode string) string {
	row := query
	if n := nexmarkEventsFor(query); n != *nexmarkEvents {
		row += fmt.Sprintf(" (%d events)", n)
	}
	if mode != "batch" {
		row += " (" + mode + ")"
	}
	return row
}

func reversed(rs []runner) []runner {
	out := make([]runner, len(rs))
	for i, r := range rs {
		out[len(rs)-1-i] = r
	}
	return out
}

// nexmarkOnce runs one query on one runner, bounded by -nexmark-timeout,
// and reads the client's result line.
func nexmarkOnce(ctx context.Context, rn runner, query, mode string) nexmarkResult {
	ctx, cancel := context.WithTimeout(ctx, *nexmarkTimeout)
	defer cancel()
	s, err := runOnce(ctx, rn, query, nexmarkClient(mode))
	if err != nil {
		switch msg := err.Error(); {
		case ctx.Err() != nil:
			return nexmarkResult{failed: fmt.Sprintf("stopped after %v", *nexmarkTimeout)}
		case strings.Contains(msg, "failed to prepare") || strings.Contains(msg, "unimplemented in prism") ||
			strings.Contains(msg, "not supported"):
			return nexmarkResult{failed: "refused: " + refusal(msg)}
		default:
			return nexmarkResult{failed: "failed: " + firstLine(strings.TrimSpace(msg))}
		}
	}
	m := nexmarkLine.FindStringSubmatch(s.out)
	if m == nil {
		return nexmarkResult{sample: s, failed: "no result line"}
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	secs, _ := strconv.ParseFloat(m[2], 64)
	return nexmarkResult{sample: s, events: nexmarkEventsFor(query), results: n, seconds: secs}
}

// refusal picks the reason out of a job server's refusal: Prism's names
// the unsupported feature, then dumps the proto that has it.
func refusal(msg string) string {
	const tag = `unsupported feature \"`
	i := strings.Index(msg, tag)
	if i < 0 {
		return "at submission"
	}
	reason := msg[i+len(tag):]
	if j := strings.Index(reason, ". "); j >= 0 {
		reason = reason[:j]
	}
	return strings.TrimPrefix(reason, "WindowingStrategy: ")
}

func (r nexmarkResult) describe() string {
	if r.failed != "" {
		return r.failed
	}
	return fmt.Sprintf("%.2f s, %.0f events/s, %d results, server CPU %v, client CPU %v, server %d MB",
		r.seconds, float64(r.events)/r.seconds, r.results, r.serverCPU, r.clientCPU.Round(10*time.Millisecond), r.serverKB>>10)
}

// loadAverage is the 1-, 5- and 15-minute load averages of the machine.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func nexmarkHeader(loadBefore, loadAfter string, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nGenerated by `make bench-nexmark` (pipelines/loadbench, -nexmark-only) on %s: the Nexmark queries of\n", nexmarkSection(), today())
	fmt.Fprintf(&b, "pipelines/nexmark (Beam's suite in Go: queries 0 to 12 and the bounded side input join) over %d events of\n", *nexmarkEvents)
	fmt.Fprintf(&b, "Beam's generator with Beam's default configuration, on weir and on Prism (v2.77.0), each job submitted by\n")
	fmt.Fprintf(&b, "`bin/nexmark --runner=universal --environment_type=LOOPBACK` to a job server of its own, alternating runners,\n")
	fmt.Fprintf(&b, "%d runs each, medians shown. Modes: %s (batch: the generator as a bounded splittable DoFn; streaming:\n", *nexmarkRuns, *nexmarkModes)
	fmt.Fprintf(&b, "unbounded, with a watermark, as fast as it goes).\n\n")
	fmt.Fprintf(&b, "Events/s is the events over the job's time as its client measured it, from submission to the end of the\n")
	fmt.Fprintf(&b, "run; CPU is the job server's user and system seconds over the run, peak RSS its VmHWM. The SDK worker runs in\n")
	fmt.Fprintf(&b, "the client (LOOPBACK): its peak is the client RSS column, and its CPU is not in the server's. Results is\n")
	fmt.Fprintf(&b, "what the counting sink counted, the same on every run and runner unless shown per runner (queries 6 and 12\n")
	fmt.Fprintf(&b, "emit a pane per trigger firing, which depends on bundling and on the wall clock).\n\n")
	fmt.Fprintf(&b, "%s **The machine is shared** with other engineers' builds and tests: load average %s at the start,\n", machine(), loadBefore)
	fmt.Fprintf(&b, "%s at the end (1, 5, 15 minutes), %v in all, so absolute figures are low and noisy; the ratios, from\n", loadAfter, took.Round(time.Minute))
	fmt.Fprintf(&b, "runs that alternate, are the steadier part.\n\n")
	fmt.Fprintf(&b, "Reproduce: `go run ./pipelines/loadbench -nexmark-only -nexmark-events %d -nexmark-events-for '%s' -nexmark-runs %d -nexmark-modes %s -out docs/benchmarks.md`.\n\n",
		*nexmarkEvents, *nexmarkFewer, *nexmarkRuns, *nexmarkModes)
	return b.String()
}

// nexmarkTable renders the medians of each row's successful runs.
func nexmarkTable(rows []string, rns []runner, res map[string]map[string][]nexmarkResult) string {
	var b strings.Builder
	b.WriteString("| query |")
	for _, rn := range rns {
		fmt.Fprintf(&b, " %s events/s |", rn.name)
	}
	if len(rns) == 2 {
		fmt.Fprintf(&b, " %s / %s |", rns[0].name, rns[1].name)
	}
	for _, rn := range rns {
		fmt.Fprintf(&b, " %s server CPU |", rn.name)
	}
	for _, rn := range rns {
		fmt.Fprintf(&b, " %s server peak RSS |", rn.name)
	}
	b.WriteString(" client RSS | results |\n|---|")
	b.WriteString(strings.Repeat(" ---: |", len(rns)*3+boolInt(len(rns) == 2)+1))
	b.WriteString(" --- |\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s |", row)
		rates := make([]float64, len(rns))
		for i, rn := range rns {
			ok, why := succeeded(res[row][rn.name])
			if len(ok) == 0 {
				fmt.Fprintf(&b, " %s |", why)
				continue
			}
			rates[i] = medianOf(ok, func(r nexmarkResult) float64 { return float64(r.events) / r.seconds })
			fmt.Fprintf(&b, " %.0f%s |", rates[i], partial(len(ok), len(res[row][rn.name])))
		}
		if len(rns) == 2 {
			if rates[0] > 0 && rates[1] > 0 {
				fmt.Fprintf(&b, " %.2fx |", rates[0]/rates[1])
			} else {
				b.WriteString(" - |")
			}
		}
		cells(&b, row, rns, res, func(rs []nexmarkResult) string {
			return fmt.Sprintf("%.1f s", medianOf(rs, func(r nexmarkResult) float64 { return r.serverCPU.Seconds() }))
		})
		cells(&b, row, rns, res, func(rs []nexmarkResult) string {
			return fmt.Sprintf("%.0f MB", medianOf(rs, func(r nexmarkResult) float64 { return float64(r.serverKB) / 1024 }))
		})
		var client []string
		for _, rn := range rns {
			if ok, _ := succeeded(res[row][rn.name]); len(ok) > 0 {
				client = append(client, fmt.Sprintf("%.0f", medianOf(ok, func(r nexmarkResult) float64 { return float64(r.clientKB) / 1024 })))
			} else {
				client = append(client, "-")
			}
		}
		fmt.Fprintf(&b, " %s MB | %s |\n", strings.Join(client, " / "), resultCounts(row, rns, res))
	}
	return b.String()
}

// cells writes one cell per runner: f of its successful runs, or "-".
func cells(b *strings.Builder, row string, rns []runner, res map[string]map[string][]nexmarkResult, f func([]nexmarkResult) string) {
	for _, rn := range rns {
		if ok, _ := succeeded(res[row][rn.name]); len(ok) > 0 {
			fmt.Fprintf(b, " %s |", f(ok))
		} else {
			b.WriteString(" - |")
		}
	}
}

// succeeded returns the runs that succeeded, and if none did, why the
// first failed.
func succeeded(rs []nexmarkResult) ([]nexmarkResult, string) {
	var ok []nexmarkResult
	why := "not run"
	for _, r := range rs {
		if r.failed == "" {
			ok = append(ok, r)
		} else if why == "not run" {
			why = r.failed
		}
	}
	return ok, why
}

func partial(ok, all int) string {
	if ok == all {
		return ""
	}
	return fmt.Sprintf(" (%d of %d runs)", ok, all)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func medianOf(rs []nexmarkResult, f func(nexmarkResult) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return median(xs)
}

// resultCounts is the one result count of every successful run, or each
// runner's counts where they differ.
func resultCounts(row string, rns []runner, res map[string]map[string][]nexmarkResult) string {
	seen := map[int64]bool{}
	var per []string
	for _, rn := range rns {
		ok, _ := succeeded(res[row][rn.name])
		var counts []string
		for _, r := range ok {
			seen[r.results] = true
			counts = append(counts, strconv.FormatInt(r.results, 10))
		}
		if len(counts) > 0 {
			per = append(per, rn.name+" "+strings.Join(counts, ", "))
		}
	}
	if len(seen) == 1 {
		for n := range seen {
			return strconv.FormatInt(n, 10)
		}
	}
	return strings.Join(per, "; ")
}
