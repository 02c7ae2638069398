// Command loadbench runs Beam's own load tests on weir and on Prism in one
// run, alternating runners, several runs each, and prints a table per SDK:
// median wall time and peak resident memory of each runner, and the
// weir/Prism ratios. The Go tests are go/test/load in the Beam module; the
// Python tests are apache_beam/testing/load_tests in the virtual
// environment of python/venv.sh, run as `python -m` subprocesses against
// the same job servers, started and measured the same way. `make bench`
// runs both and writes docs/benchmarks.md; `make bench-python` (the flag
// -python-only) runs the Python tests alone and rewrites their section;
// `make bench-nexmark` (-nexmark-only) runs the Nexmark queries of
// pipelines/nexmark on both runners and rewrites theirs (nexmark.go).
//
// Wall time is the submitting client's, from start to exit: it includes
// pipeline construction and submission, the same for both runners. Memory is
// the job server's peak resident set (VmHWM); with LOOPBACK the SDK worker
// runs in the client, whose peak is shown apart.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/weir-runner/weir/internal/benchproc"
	"github.com/weir-runner/weir/validatesrunner"
)

var (
	records = flag.Int("records", 1000000, "synthetic records per source")
	runs    = flag.Int("runs", 3, "runs per test and runner")
	tests   = flag.String("tests", "pardo,group_by_key,combine,combine_lifted,combine_unlifted,cogbk,sideinput",
		"load tests to run; combine_lifted, combine_fixed and combine_unlifted are combine with weir serving --adaptive-unlift=false, --adaptive-precombine=false or --combine-lifting=false, any test with _streamed weir serving --stream-bundle-output=on, and with _nomem --shuffle-memory=-1 (Prism as usual)")
	bin = flag.String("bin", "bin", "directory for the binaries")
	out = flag.String("out", "", "markdown file to write the table to (e.g. docs/benchmarks.md)")

	python     = flag.Bool("python", true, "also run Beam's Python load tests")
	pythonOnly = flag.Bool("python-only", false, "run only Beam's Python load tests, keeping the Go section of -out")
	pyTests    = flag.String("py-tests", "pardo,group_by_key,combine,cogbk",
		"Python load tests to run (pardo, group_by_key, combine, cogbk; the variant suffixes of -tests apply too)")
	pyRecords = flag.Int("py-records", 200000, "synthetic records per source in the Python tests")
	pyExe     = flag.String("py", "", "Python with apache-beam to run the Python tests (default: what python/venv.sh prints)")
)

const beamLoad = "github.com/apache/beam/sdks/v2/go/test/load/"

type runner struct {
	name   string
	server func(port int) []string
	// scrape serves weir's HTTP side on a free port and scrapes /metrics
	// every second while the client runs, as a Prometheus would (often).
	scrape bool
}

// variants are suffixes of test names that run a Beam load test on weir
// serving with a flag, to compare a choice weir makes; Prism runs the test
// as usual.
var variants = map[string]string{
	"_unlifted": "--combine-lifting=false",     // combines on grouped values
	"_fixed":    "--adaptive-precombine=false", // precombine in every bundle
	"_lifted":   "--adaptive-unlift=false",     // stay lifted; convert where the precombine does not reduce
	"_streamed": "--stream-bundle-output=on",   // bundles' output goes downstream as it arrives
	"_nomem":    "--shuffle-memory=-1",         // shuffles write every value to the store
}

// loadBinary is the Beam load test a test name runs.
func loadBinary(test string) string {
	for v := range variants {
		test = strings.TrimSuffix(test, v)
	}
	return test
}

var runners = []runner{
	{name: "weir", server: func(p int) []string { return []string{"weir", "serve", fmt.Sprintf("--job-port=%d", p)} }},
	{name: "prism", server: func(p int) []string { return []string{"prism", fmt.Sprintf("--job_port=%d", p), "--serve_http=false"} }},
}

type sample struct {
	wall               time.Duration
	serverKB, clientKB int64
	// serverCPU is the job server's user and system time, read as the
	// client ends (the server idles from then until it is killed).
	serverCPU time.Duration
	// out is what the client printed, stdout and stderr together.
	out string
	// clientCPU is the client's user and system time: with LOOPBACK, the
	// SDK worker's.
	clientCPU time.Duration
}

// A suite is one SDK's load tests: the names to run, how to submit one to
// a job server, and the header of its section in -out.
type suite struct {
	name   string // for logs
	tests  []string
	client func(ctx context.Context, test, addr string) *exec.Cmd
	header func() string
	// heading is the section's second-level heading in -out; "" for the
	// Go suite, which owns the file's top (markdown.go).
	heading string
}

func main() {
	flag.Parse()
	ctx := context.Background()
	if *nexmarkOnly {
		if err := build(ctx, nil); err != nil {
			log.Fatal(err)
		}
		section, err := runNexmark(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(section)
		if *out != "" {
			if err := writeSection(*out, nexmarkSection(), section); err != nil {
				log.Fatal(err)
			}
		}
		return
	}
	var suites []suite
	if !*pythonOnly {
		suites = append(suites, goSuite())
	}
	if *python || *pythonOnly {
		py, err := pythonSuite(ctx)
		if err != nil {
			log.Fatal(err)
		}
		suites = append(suites, py)
	}
	var goTests []string
	if !*pythonOnly {
		goTests = suites[0].tests
		if *costTests != "" {
			goTests = append(goTests, strings.Split(*costTests, ",")...)
		}
	}
	if err := build(ctx, goTests); err != nil {
		log.Fatal(err)
	}
	for _, su := range suites {
		if len(su.tests) == 0 {
			continue // -tests= runs none, and keeps their section of -out
		}
		section := su.header() + table(su.tests, runSuite(ctx, su))
		fmt.Print(section)
		if *out != "" {
			if err := writeSection(*out, su.heading, section); err != nil {
				log.Fatal(err)
			}
		}
	}
	if !*pythonOnly && *costTests != "" {
		section := metricsCost(ctx, suites[0])
		fmt.Print(section)
		if *out != "" {
			if err := writeSection(*out, costHeading, section); err != nil {
				log.Fatal(err)
			}
		}
	}
}

func goOpts() string {
	return fmt.Sprintf(`{"num_records":%d,"key_size":10,"value_size":90}`, *records)
}

func goSuite() suite {
	return suite{
		name:  "go",
		tests: nonEmpty(strings.Split(*tests, ",")),
		client: func(ctx context.Context, test, addr string) *exec.Cmd {
			cargs := []string{"--runner=universal", "--endpoint=" + addr, "--environment_type=LOOPBACK", "--input_options=" + goOpts()}
			if loadBinary(test) == "cogbk" {
				cargs = append(cargs, "--co_input_options="+goOpts())
			}
			return exec.CommandContext(ctx, filepath.Join(*bin, "load", loadBinary(test)), cargs...)
		},
		header: goHeader,
	}
}

// runSuite runs each test of su on both runners, -runs times, the runners
// alternating which goes first, and returns the samples by test and runner.
func runSuite(ctx context.Context, su suite) map[string]map[string][]sample {
	results := map[string]map[string][]sample{}
	for r := range *runs {
		for _, t := range su.tests {
			order := runners
			if r%2 == 1 { // alternate who goes first
				order = []runner{runners[1], runners[0]}
			}
			for _, rn := range order {
				s, err := runOnce(ctx, rn, t, su.client)
				if err != nil {
					log.Fatalf("%s %s on %s, run %d: %v", su.name, t, rn.name, r+1, err)
				}
				log.Printf("%s %s on %s, run %d: %v, server %d MB, client %d MB", su.name, t, rn.name, r+1,
					s.wall.Round(10*time.Millisecond), s.serverKB>>10, s.clientKB>>10)
				if results[t] == nil {
					results[t] = map[string][]sample{}
				}
				results[t][rn.name] = append(results[t][rn.name], s)
			}
		}
	}
	return results
}

func build(ctx context.Context, names []string) error {
	steps := [][]string{
		{"go", "build", "-o", filepath.Join(*bin, "weir"), "./cmd/weir"},
		{"go", "build", "-o", filepath.Join(*bin, "prism"), "github.com/apache/beam/sdks/v2/go/cmd/prism"},
	}
	built := map[string]bool{}
	for _, n := range names {
		if b := loadBinary(n); !built[b] {
			built[b] = true
			steps = append(steps, []string{"go", "build", "-o", filepath.Join(*bin, "load", b), beamLoad + b})
		}
	}
	for _, s := range steps {
		cmd := exec.CommandContext(ctx, s[0], s[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(s, " "), err)
		}
	}
	return nil
}

// runOnce starts rn's job server on a free port, runs the client that
// client makes for test against it, and measures the client's wall time
// and peak RSS and the server's peak RSS.
func runOnce(ctx context.Context, rn runner, test string, client func(ctx context.Context, test, addr string) *exec.Cmd) (sample, error) {
	port, err := validatesrunner.FreePort()
	if err != nil {
		return sample{}, err
	}
	args := rn.server(port)
	if strings.HasPrefix(rn.name, "weir") {
		// A state folder of its own, so that no run reads another's (or
		// another weir's on this machine) job records.
		dir, err := os.MkdirTemp("", "loadbench-weir-")
		if err != nil {
			return sample{}, err
		}
		defer os.RemoveAll(dir)
		args = append(args, "--state-dir="+dir)
		for v, flag := range variants {
			if strings.HasSuffix(test, v) {
				args = append(args, flag)
			}
		}
	}
	scrapeAddr := ""
	if rn.scrape {
		hp, err := validatesrunner.FreePort()
		if err != nil {
			return sample{}, err
		}
		scrapeAddr = fmt.Sprintf("127.0.0.1:%d", hp)
		args = append(args, "--http-addr="+scrapeAddr)
	}
	srv := exec.CommandContext(ctx, filepath.Join(*bin, args[0]), args[1:]...)
	srv.Stdout, srv.Stderr = io.Discard, io.Discard
	if err := srv.Start(); err != nil {
		return sample{}, err
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	addr := fmt.Sprintf("localhost:%d", port)
	if err := benchproc.WaitPort(addr, time.Minute); err != nil {
		return sample{}, fmt.Errorf("%s server: %w", rn.name, err)
	}
	cl := client(ctx, test, addr)
	var logs strings.Builder
	cl.Stdout, cl.Stderr = &logs, &logs
	start := time.Now()
	if scrapeAddr != "" {
		stop := scrapeEverySecond(ctx, scrapeAddr)
		defer func() {
			if n, err := stop(); err != nil {
				log.Printf("%s %s: scraping /metrics (%d scrapes): %v", rn.name, test, n, err)
			}
		}()
	}
	if err := cl.Run(); err != nil {
		tail := logs.String()
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return sample{}, fmt.Errorf("client: %w\n%s", err, tail)
	}
	s := sample{wall: time.Since(start), out: logs.String()}
	if ru, ok := cl.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.clientKB = ru.Maxrss
		s.clientCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if s.serverCPU, err = benchproc.CPUTime(srv.Process.Pid); err != nil {
		return s, err
	}
	s.serverKB, err = benchproc.PeakRSS(srv.Process.Pid)
	return s, err
}

func median(xs []float64) float64 { return benchproc.Median(xs) }

func med(ss []sample, f func(sample) float64) float64 {
	xs := make([]float64, len(ss))
	for i, s := range ss {
		xs[i] = f(s)
	}
	return median(xs)
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
