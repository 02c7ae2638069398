package filesource_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/runner"
)

func lineKey(_, _ []byte) string { return "lines" }

func formatCount(w beam.Window, _ string, n int) string {
	return fmt.Sprintf("%s %d", w.(window.IntervalWindow).Start.ToTime().UTC().Format("15:04"), n)
}

func formatFile(m fileio.FileMetadata) string {
	return fmt.Sprintf("%s %d %d", filepath.Base(m.Path), m.SizeBytes, m.LastModifiedMillis)
}

func init() {
	register.Function2x1(lineKey)
	register.Function3x1(formatCount)
	register.Function1x1(formatFile)
}

// TestPipeline runs a Go pipeline on in-process weir, with a checkpoint
// every 50 ms, of two bounded watches into file sinks: the lines of six
// files, at the minute in each file's name, counted in one-minute fixed
// windows (the watermark from the names closes each window); and the
// same files' metadata rows, decoded by the Go SDK as
// fileio.FileMetadata. Files arrive while the job runs.
func TestPipeline(t *testing.T) {
	root := t.TempDir()
	in, counts, metas := filepath.Join(root, "in"), filepath.Join(root, "counts"), filepath.Join(root, "metas")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{runner.CheckpointIntervalOption: "50ms", runner.CheckpointDirOption: filepath.Join(root, "cp")} {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	const files = 6
	lines := fileio.Watch(s, fileio.WatchConfig{Dir: in, Mode: fileio.ModeLines, Ready: fileio.ReadyRenamed, PollIntervalMillis: 10,
		Timestamp: fileio.TimeName, NameLayout: "events-2006-01-02T15-04.log", MaxFiles: files})
	n := stats.Count(s, beam.WindowInto(s, window.NewFixedWindows(time.Minute), beam.ParDo(s, lineKey, lines)))
	fileio.Write(s, fileio.WriteConfig{Dir: counts}, beam.ParDo(s, formatCount, n))
	rows := fileio.Watch(s, fileio.WatchConfig{Dir: in, MaxFiles: files, PollIntervalMillis: 10})
	fileio.Write(s, fileio.WriteConfig{Dir: metas}, beam.ParDo(s, formatFile, rows))

	done := make(chan error, 1)
	go func() { _, err := runner.Execute(context.Background(), p); done <- err }()
	var wantCounts, wantMetas []string
	for i := range files {
		name := fmt.Sprintf("events-2026-12-01T12-%02d.log", i)
		body := strings.Repeat("x\n", i+1)
		mod := time.UnixMilli(1_790_000_000_000 + int64(i)*1000)
		tmp := filepath.Join(in, "."+name)
		if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(tmp, mod, mod); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(in, name)); err != nil {
			t.Fatal(err)
		}
		wantCounts = append(wantCounts, fmt.Sprintf("12:%02d %d", i, i+1))
		wantMetas = append(wantMetas, fmt.Sprintf("%s %d %d", name, len(body), mod.UnixMilli()))
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		want []string
	}{{counts, wantCounts}, {metas, wantMetas}} {
		got := readLines(t, c.dir)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s holds\n%q\nwant\n%q", filepath.Base(c.dir), got, c.want)
		}
	}
}

// readLines returns the lines of the committed files in dir, sorted.
func readLines(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
	}
	slices.Sort(out)
	return out
}
