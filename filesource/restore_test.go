package filesource_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/runner"
)

// crashArmed makes crashFn fail its bundle: the first run's crash.
var crashArmed atomic.Bool

// crashFn passes lines on; armed, it fails on a line of the fourth file
// or later once the sink has committed output, so a checkpoint that
// holds the watch mid-stream has completed.
type crashFn struct{ Out string }

func (f *crashFn) ProcessElement(path, line []byte) string {
	var minute int
	if _, err := fmt.Sscanf(filepath.Base(string(path)), "events-2026-12-01T12-%02d.log", &minute); err != nil {
		panic(err)
	}
	if crashArmed.Load() && minute >= 3 && committed(f.Out) {
		panic("simulated crash")
	}
	return "lines"
}

func committed(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			return true
		}
	}
	return false
}

func init() { register.DoFn2x1[[]byte, []byte, string](&crashFn{}) }

// TestPipelineRestore crashes a checkpointed job reading a folder once
// some windows are committed, and restores it from its checkpoint with
// the rest of the files in the folder: every window's count is in the
// sink's files exactly once, so no file was read twice or skipped.
func TestPipelineRestore(t *testing.T) {
	root := t.TempDir()
	in, counts := filepath.Join(root, "in"), filepath.Join(root, "counts")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{runner.CheckpointIntervalOption: "20ms", runner.CheckpointDirOption: filepath.Join(root, "cp")} {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	const files = 8
	pipeline := func() *beam.Pipeline {
		p, s := beam.NewPipelineWithRoot()
		lines := fileio.Watch(s, fileio.WatchConfig{Dir: in, Mode: fileio.ModeLines, Ready: fileio.ReadyRenamed, PollIntervalMillis: 10,
			Timestamp: fileio.TimeName, NameLayout: "events-2006-01-02T15-04.log", MaxFiles: files})
		n := stats.Count(s, beam.WindowInto(s, window.NewFixedWindows(time.Minute), beam.ParDo(s, &crashFn{Out: counts}, lines)))
		fileio.Write(s, fileio.WriteConfig{Dir: counts}, beam.ParDo(s, formatCount, n))
		return p
	}
	var want []string
	put := func(i int) {
		name := fmt.Sprintf("events-2026-12-01T12-%02d.log", i)
		tmp := filepath.Join(in, "."+name)
		if err := os.WriteFile(tmp, []byte(strings.Repeat("x\n", 10*(i+1))), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(in, name)); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("12:%02d %d", i, 10*(i+1)))
	}
	beam.Init()
	crashArmed.Store(true)
	done := make(chan error, 1)
	go func() { _, err := runner.Execute(context.Background(), pipeline()); done <- err }()
	i := 0
	var err error
	for running := true; running; {
		select {
		case err = <-done:
			running = false
		case <-time.After(100 * time.Millisecond):
			if i < files-2 {
				put(i)
				i++
			}
		}
	}
	if err == nil || !strings.Contains(err.Error(), "simulated crash") {
		t.Fatalf("the first run ended with %v, want the simulated crash", err)
	}
	before := readLines(t, counts)
	t.Logf("committed before the crash: %q", before)
	crashArmed.Store(false)
	for ; i < files; i++ {
		put(i)
	}
	beam.PipelineOptions.Set(runner.RestoreOption, "true")
	defer beam.PipelineOptions.Set(runner.RestoreOption, "")
	if _, err := runner.Execute(context.Background(), pipeline()); err != nil {
		t.Fatal(err)
	}
	got := readLines(t, counts)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("counts after the restore\n%q\nwant each window once\n%q", got, want)
	}
}
