package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/weir-runner/weir/runner"
	"github.com/weir-runner/weir/webui"
	"github.com/weir-runner/weir/webui/uitest"
)

func tickKey(i int64) (int64, int64) { return i % 3, 1 }

func dropCount(int64, int64) {}

func init() {
	register.Function1x2(tickKey)
	register.Function2x0(dropCount)
}

// TestUIStreamingJob starts the weir binary's `serve`, runs an unbounded
// pipeline on it (a periodic sequence, windowed and summed per key, with
// checkpoints every 500 ms), and
// drives the web UI in headless Chromium: the job is listed, its graph
// shows its stages, a stage's watermark advances while the page is open,
// completed checkpoints are listed,
// Drain ends the job DRAINED, and the page says so.
//
// WEIR_UI_SCREENSHOTS=dir saves the pages as jobs.png, job.png and
// drained.png there (docs/ui.md shows the committed ones: make ui-screenshots).
func TestUIStreamingJob(t *testing.T) {
	b := uitest.New(t, uitest.WithTimeout(60*time.Second))
	jobAddr, httpAddr := startServe(t)

	endpoint, env := *jobopts.Endpoint, *jobopts.EnvironmentType
	*jobopts.Endpoint, *jobopts.EnvironmentType = jobAddr, "LOOPBACK"
	defer func() { *jobopts.Endpoint, *jobopts.EnvironmentType = endpoint, env }()
	for k, v := range map[string]string{"job_name": "ticks-per-key",
		runner.CheckpointIntervalOption: "500ms", runner.CheckpointDirOption: t.TempDir()} {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	start := time.Now()
	seq := periodic.Sequence(s, beam.Create(s, periodic.NewSequenceDefinition(start, start.Add(time.Hour), 100*time.Millisecond)))
	keyed := beam.ParDo(s, tickKey, beam.WindowInto(s, window.NewFixedWindows(time.Second), seq))
	beam.ParDo0(s, dropCount, stats.SumPerKey(s, keyed))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := universal.Execute(ctx, p); done <- err }()

	sel := uitest.TestID
	b.Navigate("http://" + httpAddr + "/")
	b.WaitText(sel(webui.TestIDJobState), uitest.Equals("RUNNING"))
	shoot(t, b, "jobs.png")

	b.Click(sel(webui.TestIDJobLink))
	b.WaitVisible(sel(webui.TestIDStageGraph))
	names := b.Attrs(sel(webui.TestIDStageNode), "data-stage-name")
	var sum, sdf bool
	for _, n := range names {
		sum = sum || strings.Contains(n, "SumPerKey")
		sdf = sdf || strings.Contains(n, "sequenceGen")
	}
	if len(names) < 3 || !sum || !sdf {
		t.Errorf("stage graph shows %q: want the sequence's SDF, the sum and more", names)
	}
	// The grouping stage's output watermark moves while the page is open.
	var gbk string
	for _, n := range names {
		if strings.Contains(n, "SumPerKey") {
			gbk = n
			break
		}
	}
	wm := sel(webui.TestIDStageNode, "data-stage-name", gbk) + " " + sel(webui.TestIDStageWatermark)
	first := b.WaitText(wm, uitest.Func("a time", func(s string) bool { return strings.Contains(s, ":") }))
	b.WaitText(wm, uitest.Func("a later time than "+first, func(s string) bool { return strings.Contains(s, ":") && s != first }))
	// Checkpoints every 500 ms: the history shows completed ones.
	b.WaitVisible(sel(webui.TestIDCheckpointRow, "data-status", "completed"))
	shoot(t, b, "job.png")

	b.Click(sel(webui.TestIDBtnDrain))
	b.WaitText(sel(webui.TestIDActionResult), uitest.Not(uitest.Contains("…")))
	b.WaitText(sel(webui.TestIDJobState), uitest.Equals("DRAINED"))
	if err := <-done; err != nil {
		t.Fatalf("drained pipeline: %v", err)
	}
	shoot(t, b, "drained.png")
}

// startServe runs the weir binary's serve on free ports, stopped with
// SIGTERM by t.Cleanup, and returns its job service and HTTP addresses.
func startServe(t *testing.T) (jobAddr, httpAddr string) {
	t.Helper()
	srv := startServeWith(t, "--host=127.0.0.1", "--job-port=0", "--http-addr=127.0.0.1:0", "--expansion-port=-1")
	return srv.job, srv.http
}

// served is a weir serve process: the addresses it printed, and its
// stderr, line by line.
type served struct {
	cmd                  *exec.Cmd
	job, http, expansion string
	stderr               <-chan string
}

// startServeWith runs the weir binary's serve with args, stopped with
// SIGTERM by t.Cleanup, and reads the addresses it prints: the job
// service's always, the UI's and the expansion service's if it serves
// them (--http-addr, --expansion-port).
func startServeWith(t *testing.T, args ...string) *served {
	t.Helper()
	cmd := exec.Command(weirBinary(t), append([]string{"serve"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	errLines := make(chan string, 1000)
	go func() {
		defer close(errLines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, sc.Text())
			select {
			case errLines <- sc.Text():
			default: // nobody reads: keep the server unblocked
			}
		}
	}()
	srv := &served{cmd: cmd, stderr: errLines}
	lines := bufio.NewScanner(stdout)
	for srv.job == "" && lines.Scan() {
		l := lines.Text()
		if rest, ok := strings.CutPrefix(l, "weir job service on "); ok {
			srv.job, _, _ = strings.Cut(rest, ";")
		}
		if rest, ok := strings.CutPrefix(l, "weir expansion service on "); ok {
			srv.expansion, _, _ = strings.Cut(rest, ";")
		}
		if _, rest, ok := strings.Cut(l, "weir web UI on "); ok {
			_, rest, _ = strings.Cut(rest, "://")
			srv.http, _, _ = strings.Cut(rest, "/")
		}
	}
	wantHTTP := !slices.Contains(args, "--http-addr=")
	if srv.job == "" || (wantHTTP && srv.http == "") {
		t.Fatalf("weir serve did not print its addresses (job %q, http %q): %v", srv.job, srv.http, lines.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return srv
}

// weirBin is the weir binary the tests that run it share: built once,
// on first use (a build takes seconds, tens on a busy machine), removed
// by TestMain.
var weirBin struct {
	once      sync.Once
	dir, path string
	err       error
}

func weirBinary(t *testing.T) string {
	t.Helper()
	weirBin.once.Do(func() {
		if weirBin.dir, weirBin.err = os.MkdirTemp("", "weir-test-bin-"); weirBin.err != nil {
			return
		}
		weirBin.path = filepath.Join(weirBin.dir, "weir")
		if out, err := exec.Command("go", "build", "-o", weirBin.path, ".").CombinedOutput(); err != nil {
			weirBin.err = fmt.Errorf("building weir: %v\n%s", err, out)
		}
	})
	if weirBin.err != nil {
		t.Fatal(weirBin.err)
	}
	return weirBin.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if weirBin.dir != "" {
		os.RemoveAll(weirBin.dir)
	}
	os.Exit(code)
}

func shoot(t *testing.T, b *uitest.Browser, name string) {
	if dir := os.Getenv("WEIR_UI_SCREENSHOTS"); dir != "" {
		b.Screenshot(filepath.Join(dir, name))
	}
}
