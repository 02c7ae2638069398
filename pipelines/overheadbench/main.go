// Command overheadbench measures what a job server itself spends per
// element: its CPU time and peak resident set while a Go pipeline runs on
// it with a LOOPBACK worker, on weir and on Prism, alternating, several
// runs each, medians. The SDK worker runs in the client process, so the
// job server's own CPU (/proc/<pid>/stat, read before the job is submitted
// and after the client has seen it finish) is the runner's alone.
//
// Two pipelines (pipeline.go): pardo, a fused chain of ParDos over n small
// integers, where the runner moves no element; and gbk, n small integers
// grouped over a number of keys and counted, where every element goes
// through the runner's shuffle. `make bench-overhead` runs both and writes
// the "Runner overhead" section of docs/benchmarks.md.
//
// The program is its own client: it runs itself with -client for each
// job, so every job gets a fresh SDK worker and the bench process holds
// none of their memory.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/weir-runner/weir/internal/benchproc"
	"github.com/weir-runner/weir/validatesrunner"
)

var (
	n         = flag.Int("n", 2_000_000, "small integers per job")
	keys      = flag.Int("keys", 1000, "keys the gbk test groups over")
	runs      = flag.Int("runs", 5, "runs per test and runner")
	tests     = flag.String("tests", "gbk,pardo", "tests to run: gbk, pardo")
	runnersF  = flag.String("runners", "weir,prism", "job servers to run on: weir, prism")
	bin       = flag.String("bin", "bin", "directory for the binaries")
	out       = flag.String("out", "", "markdown file to write the section to (e.g. docs/benchmarks.md)")
	weirFlags = flag.String("weir-flags", "", "extra flags for weir serve, space-separated")
	profile   = flag.String("profile", "", "if set, a folder for weir's CPU and allocation profiles of each run (pprof, over --debug-addr)")
	profSecs  = flag.Int("profile-seconds", 10, "length of each CPU profile")

	client   = flag.Bool("client", false, "run one job as the client (used by the bench itself)")
	test     = flag.String("test", "", "with -client: the test to run")
	endpoint = flag.String("job-endpoint", "", "with -client: the job server")
)

// sample is one job's figures.
type sample struct {
	wall      time.Duration
	serverCPU time.Duration // the job server's user and system time over the job
	serverKB  int64         // its peak resident set
}

func main() {
	flag.Parse()
	if *client {
		if err := runClient(context.Background()); err != nil {
			log.Fatalf("overheadbench client: %v", err)
		}
		return
	}
	if err := bench(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func bench(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	names, rns := split(*tests), split(*runnersF)
	for _, rn := range rns {
		if rn != "weir" && rn != "prism" {
			return fmt.Errorf("unknown runner %q (weir, prism)", rn)
		}
	}
	if err := buildServers(ctx, rns); err != nil {
		return err
	}
	log.Printf("load average before: %s", benchproc.LoadAverage())
	res := map[string]map[string][]sample{}
	for r := range *runs {
		for _, t := range names {
			order := rns
			if r%2 == 1 { // alternate who goes first
				order = reverse(rns)
			}
			for _, rn := range order {
				s, err := runOnce(ctx, self, rn, t, r)
				if err != nil {
					return fmt.Errorf("%s on %s, run %d: %w", t, rn, r+1, err)
				}
				log.Printf("%s on %s, run %d: %v wall, server %.3f s CPU (%.2f µs/element), peak %d MB",
					t, rn, r+1, s.wall.Round(10*time.Millisecond), s.serverCPU.Seconds(),
					perElement(s.serverCPU), s.serverKB>>10)
				if res[t] == nil {
					res[t] = map[string][]sample{}
				}
				res[t][rn] = append(res[t][rn], s)
			}
		}
	}
	section := render(names, rns, res)
	fmt.Print(section)
	if *out != "" {
		return benchproc.WriteSection(*out, heading, section)
	}
	return nil
}

func buildServers(ctx context.Context, rns []string) error {
	pkgs := map[string]string{"weir": "./cmd/weir", "prism": "github.com/apache/beam/sdks/v2/go/cmd/prism"}
	for _, rn := range rns {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(*bin, rn), pkgs[rn])
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", rn, err)
		}
	}
	return nil
}

// runOnce starts rn's job server, runs one job of test on it and measures
// the server over the job.
func runOnce(ctx context.Context, self, rn, test string, run int) (sample, error) {
	port, err := validatesrunner.FreePort()
	if err != nil {
		return sample{}, err
	}
	var args []string
	debugAddr := ""
	switch rn {
	case "weir":
		dir, err := os.MkdirTemp("", "overheadbench-weir-")
		if err != nil {
			return sample{}, err
		}
		defer os.RemoveAll(dir)
		args = []string{"serve", fmt.Sprintf("--job-port=%d", port), "--state-dir=" + dir}
		args = append(args, strings.Fields(*weirFlags)...)
		if *profile != "" {
			dp, err := validatesrunner.FreePort()
			if err != nil {
				return sample{}, err
			}
			debugAddr = fmt.Sprintf("127.0.0.1:%d", dp)
			args = append(args, "--debug-addr="+debugAddr)
		}
	case "prism":
		args = []string{fmt.Sprintf("--job_port=%d", port), "--serve_http=false"}
	}
	srv := exec.CommandContext(ctx, filepath.Join(*bin, rn), args...)
	srv.Stdout, srv.Stderr = io.Discard, io.Discard
	if err := srv.Start(); err != nil {
		return sample{}, err
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	addr := fmt.Sprintf("localhost:%d", port)
	if err := benchproc.WaitPort(addr, time.Minute); err != nil {
		return sample{}, fmt.Errorf("%s server: %w", rn, err)
	}
	before, err := benchproc.CPUTime(srv.Process.Pid)
	if err != nil {
		return sample{}, err
	}
	var profDone <-chan error
	if debugAddr != "" {
		profDone = fetchProfile(ctx, debugAddr, fmt.Sprintf("%s-%s-%d", test, rn, run+1))
	}
	cl := exec.CommandContext(ctx, self, "-client", "-test="+test, fmt.Sprintf("-n=%d", *n), fmt.Sprintf("-keys=%d", *keys),
		"-job-endpoint="+addr)
	var logs strings.Builder
	cl.Stdout, cl.Stderr = &logs, &logs
	start := time.Now()
	if err := cl.Run(); err != nil {
		tail := logs.String()
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return sample{}, fmt.Errorf("client: %w\n%s", err, tail)
	}
	s := sample{wall: time.Since(start)}
	after, err := benchproc.CPUTime(srv.Process.Pid)
	if err != nil {
		return s, err
	}
	s.serverCPU = after - before
	if s.serverKB, err = benchproc.PeakRSS(srv.Process.Pid); err != nil {
		return s, err
	}
	if profDone != nil {
		if err := <-profDone; err != nil {
			log.Printf("profile: %v", err)
		}
		if err := get(ctx, "http://"+debugAddr+"/debug/pprof/allocs", filepath.Join(*profile, fmt.Sprintf("%s-%s-%d.allocs", test, rn, run+1))); err != nil {
			log.Printf("allocation profile: %v", err)
		}
	}
	return s, nil
}

// fetchProfile takes a CPU profile of -profile-seconds from weir's debug
// listener into the -profile folder.
func fetchProfile(ctx context.Context, addr, name string) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- get(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, *profSecs),
			filepath.Join(*profile, name+".cpu"))
	}()
	return done
}

func get(ctx context.Context, url, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func perElement(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(*n) }

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func reverse(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[len(ss)-1-i] = s
	}
	return out
}
