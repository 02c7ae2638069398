// Command loadbench runs Beam's own Go load tests (go/test/load in the Beam
// module) on weir and on Prism in one run, alternating runners, several runs
// each, and prints one table: median wall time and peak resident memory of
// each runner, and the weir/Prism ratios. `make bench` runs it and writes
// docs/benchmarks.md.
//
// Wall time is the submitting client's, from start to exit: it includes
// pipeline construction and submission, the same for both runners. Memory is
// the job server's peak resident set (VmHWM); with LOOPBACK the SDK worker
// runs in the client, whose peak is shown apart.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/weir-runner/weir/validatesrunner"
)

var (
	records = flag.Int("records", 1000000, "synthetic records per source")
	runs    = flag.Int("runs", 3, "runs per test and runner")
	tests   = flag.String("tests", "pardo,group_by_key,combine,combine_lifted,combine_unlifted,cogbk,sideinput",
		"load tests to run; combine_lifted, combine_fixed and combine_unlifted are combine with weir serving --adaptive-unlift=false, --adaptive-precombine=false or --combine-lifting=false (Prism as usual)")
	bin = flag.String("bin", "bin", "directory for the binaries")
	out = flag.String("out", "", "markdown file to write the table to (e.g. docs/benchmarks.md)")
)

const beamLoad = "github.com/apache/beam/sdks/v2/go/test/load/"

type runner struct {
	name   string
	server func(port int) []string
}

// variants are suffixes of test names that run a Beam load test on weir
// serving with a flag, to compare a choice weir makes; Prism runs the test
// as usual.
var variants = map[string]string{
	"_unlifted": "--combine-lifting=false",     // combines on grouped values
	"_fixed":    "--adaptive-precombine=false", // precombine in every bundle
	"_lifted":   "--adaptive-unlift=false",     // stay lifted; convert where the precombine does not reduce
}

// loadBinary is the Beam load test a test name runs.
func loadBinary(test string) string {
	for v := range variants {
		test = strings.TrimSuffix(test, v)
	}
	return test
}

var runners = []runner{
	{"weir", func(p int) []string { return []string{"weir", "serve", fmt.Sprintf("--job-port=%d", p)} }},
	{"prism", func(p int) []string { return []string{"prism", fmt.Sprintf("--job_port=%d", p), "--serve_http=false"} }},
}

type sample struct {
	wall               time.Duration
	serverKB, clientKB int64
}

func main() {
	flag.Parse()
	ctx := context.Background()
	names := strings.Split(*tests, ",")
	if err := build(ctx, names); err != nil {
		log.Fatal(err)
	}
	opts := fmt.Sprintf(`{"num_records":%d,"key_size":10,"value_size":90}`, *records)
	results := map[string]map[string][]sample{}
	for r := range *runs {
		for _, t := range names {
			order := runners
			if r%2 == 1 { // alternate who goes first
				order = []runner{runners[1], runners[0]}
			}
			for _, rn := range order {
				s, err := runOnce(ctx, rn, t, opts)
				if err != nil {
					log.Fatalf("%s on %s, run %d: %v", t, rn.name, r+1, err)
				}
				log.Printf("%s on %s, run %d: %v, server %d MB, client %d MB", t, rn.name, r+1,
					s.wall.Round(10*time.Millisecond), s.serverKB>>10, s.clientKB>>10)
				if results[t] == nil {
					results[t] = map[string][]sample{}
				}
				results[t][rn.name] = append(results[t][rn.name], s)
			}
		}
	}
	table := render(names, results, opts)
	fmt.Print(table)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(table+otherSections(*out)), 0o644); err != nil {
			log.Fatal(err)
		}
	}
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

func runOnce(ctx context.Context, rn runner, test, opts string) (sample, error) {
	port, err := validatesrunner.FreePort()
	if err != nil {
		return sample{}, err
	}
	args := rn.server(port)
	for v, flag := range variants {
		if rn.name == "weir" && strings.HasSuffix(test, v) {
			args = append(args, flag)
		}
	}
	srv := exec.CommandContext(ctx, filepath.Join(*bin, args[0]), args[1:]...)
	srv.Stdout, srv.Stderr = io.Discard, io.Discard
	if err := srv.Start(); err != nil {
		return sample{}, err
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	addr := fmt.Sprintf("localhost:%d", port)
	if err := waitPort(addr, time.Minute); err != nil {
		return sample{}, fmt.Errorf("%s server: %w", rn.name, err)
	}
	cargs := []string{"--runner=universal", "--endpoint=" + addr, "--environment_type=LOOPBACK", "--input_options=" + opts}
	if test == "cogbk" {
		cargs = append(cargs, "--co_input_options="+opts)
	}
	cl := exec.CommandContext(ctx, filepath.Join(*bin, "load", loadBinary(test)), cargs...)
	var logs strings.Builder
	cl.Stdout, cl.Stderr = &logs, &logs
	start := time.Now()
	if err := cl.Run(); err != nil {
		tail := logs.String()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return sample{}, fmt.Errorf("client: %w\n%s", err, tail)
	}
	s := sample{wall: time.Since(start)}
	if ru, ok := cl.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.clientKB = ru.Maxrss
	}
	s.serverKB, err = peakRSS(srv.Process.Pid)
	return s, err
}

func waitPort(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no listener on %s after %v", addr, d)
}

// peakRSS reads a live process's peak resident set in KiB.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", pid)
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func med(ss []sample, f func(sample) float64) float64 {
	xs := make([]float64, len(ss))
	for i, s := range ss {
		xs[i] = f(s)
	}
	return median(xs)
}

func render(names []string, res map[string]map[string][]sample, opts string) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "# Benchmarks\n\nGenerated by `make bench` (pipelines/loadbench) on %s: Beam's Go load tests\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "(`go/test/load/*` from Beam v2.77.0) on weir and on Prism (Beam's own job server from the same module),\n")
	fmt.Fprintf(&b, "alternating runners, %d runs each, medians shown. Input: `%s`.\n\n", *runs, opts)
	fmt.Fprintf(&b, "Machine: %d cores, %s, %s, host %s. Wall is the client's, submit to exit;\n", runtime.NumCPU(), memTotal(), runtime.Version(), host)
	fmt.Fprintf(&b, "runner RSS is the job server's peak resident set; the SDK worker runs in the client (LOOPBACK), whose peak is the last column.\n\n")
	fmt.Fprintf(&b, "Reproduce: `go run ./pipelines/loadbench -records %d -runs %d -out docs/benchmarks.md`.\n\n", *records, *runs)
	fmt.Fprintf(&b, "`combine` runs as weir does by default: lifted, until its first bundle finds that keys do not repeat, and then\n")
	fmt.Fprintf(&b, "unlifted. `combine_lifted` is the combine test with weir serving `--adaptive-unlift=false` (it stays lifted and converts\n")
	fmt.Fprintf(&b, "each input to an accumulator on its own where the precombine does not reduce), and `combine_unlifted` with\n")
	fmt.Fprintf(&b, "`--combine-lifting=false` (the SDK runs the CombineFn on grouped values, no precombine); Prism runs them all as usual.\n")
	fmt.Fprintf(&b, "`-tests` also takes `combine_fixed` (`--adaptive-precombine=false`: precombine in every bundle).\n\n")
	b.WriteString("| test | weir wall | prism wall | wall ratio | weir runner RSS | prism runner RSS | RSS ratio | client RSS weir / prism |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, t := range names {
		w, p := res[t]["weir"], res[t]["prism"]
		ww, pw := med(w, func(s sample) float64 { return s.wall.Seconds() }), med(p, func(s sample) float64 { return s.wall.Seconds() })
		wr, pr := med(w, func(s sample) float64 { return float64(s.serverKB) / 1024 }), med(p, func(s sample) float64 { return float64(s.serverKB) / 1024 })
		wc, pc := med(w, func(s sample) float64 { return float64(s.clientKB) / 1024 }), med(p, func(s sample) float64 { return float64(s.clientKB) / 1024 })
		fmt.Fprintf(&b, "| %s | %.1f s | %.1f s | %.2fx | %.0f MB | %.0f MB | %.2fx | %.0f / %.0f MB |\n", t, ww, pw, ww/pw, wr, pr, wr/pr, wc, pc)
	}
	return b.String()
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown memory"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return fmt.Sprintf("%d GiB", kb>>20)
		}
	}
	return "unknown memory"
}

// otherSections returns what follows the load tests in the file at path:
// everything from its first second-level heading on, which other
// benchmarks (bench-backfill, bench-checkpoint) keep there. The notes
// between the table and that heading belong to the run they describe and
// are dropped with it.
func otherSections(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if i := strings.Index(string(b), "\n## "); i >= 0 {
		return "\n" + string(b[i+1:])
	}
	return ""
}
