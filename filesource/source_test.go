package filesource

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/wire"
)

// sink collects what a source emits: elements with their timestamps, and
// watermarks.
type sink struct {
	mu      sync.Mutex
	changed chan struct{}
	elems   [][]byte
	wms     []mtime.Time
}

func newSink() *sink { return &sink{changed: make(chan struct{})} }

func (s *sink) Process(_ context.Context, _ int, elems [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range elems {
		s.elems = append(s.elems, slices.Clone(e))
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

func (s *sink) Watermark(_ context.Context, _ int, wm mtime.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wms = append(s.wms, wm)
	return nil
}

func (s *sink) Barrier(context.Context, executor.BarrierID) error { return nil }
func (s *sink) Finish(context.Context) error                      { return nil }

// waitElems waits until the sink holds n elements.
func (s *sink) waitElems(n int) {
	for {
		s.mu.Lock()
		ok, ch := len(s.elems) >= n, s.changed
		s.mu.Unlock()
		if ok {
			return
		}
		<-ch
	}
}

// run runs src before a sink until it ends; cancel stops it.
func run(src executor.Source) (*sink, func() error) {
	k := newSink()
	g := &executor.Graph{Nodes: []*executor.Node{
		{Name: "watch", Parallelism: 1, Outputs: 1, NewSource: func(int, *executor.Output) (executor.Source, error) { return src, nil }},
		{Name: "sink", Parallelism: 1, Inputs: []executor.NodeInput{{From: 0, Output: 0, Partition: executor.Forward}},
			New: func(int, *executor.Output) (executor.Operator, error) { return k, nil }},
	}}
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background(), nil) }()
	return k, func() error { return <-done }
}

// decoded is an element: its timestamp and the values of its KV or row.
type decoded struct {
	ts     mtime.Time
	fields []string
}

func decode(t *testing.T, e []byte, lines bool) decoded {
	t.Helper()
	if len(e) < 8+4+1 {
		t.Fatalf("element %x too short", e)
	}
	ts := wire.DecodeTime(e)
	// time, one window (the global one: no bytes), the pane, the value.
	v := e[8+4+1:]
	if lines {
		k, rest, err := nested(v)
		if err != nil {
			t.Fatal(err)
		}
		l, _, err := nested(rest)
		if err != nil {
			t.Fatal(err)
		}
		return decoded{ts, []string{string(k), string(l)}}
	}
	row, _, err := nested(v)
	if err != nil || len(row) < 2 || row[0] != 3 || row[1] != 0 {
		t.Fatalf("row %x: %v", row, err)
	}
	p, rest, err := nested(row[2:])
	if err != nil {
		t.Fatal(err)
	}
	size, n := binary.Uvarint(rest)
	mod, _ := binary.Uvarint(rest[n:])
	return decoded{ts, []string{string(p), fmt.Sprint(size), fmt.Sprint(mod)}}
}

func put(t *testing.T, dir, name, body string, mod time.Time) {
	t.Helper()
	tmp := filepath.Join(dir, ".tmp-"+filepath.Base(name))
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, mod, mod); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// TestFilesMode: each file once, as a row of its path, size and
// modification time at that time; hidden files and names the pattern
// does not match are left; the bounded watch ends at +inf.
func TestFilesMode(t *testing.T) {
	dir := t.TempDir()
	m1, m2 := time.UnixMilli(1_700_000_000_123), time.UnixMilli(1_700_000_005_000)
	put(t, dir, "b.csv", "12345", m2)
	put(t, dir, "a.csv", "1", m1)
	put(t, dir, "c.txt", "no", m1)
	put(t, dir, "_SUCCESS.csv", "", m1)
	cfg := &fileio.WatchConfig{Dir: dir, Pattern: "*.csv", Ready: fileio.ReadyRenamed, PollIntervalMillis: 5, MaxFiles: 3}
	k, wait := run(&Source{Config: cfg, Folder: OSFolder(dir), Name: "w"})
	k.waitElems(2)
	put(t, dir, "sub/d.csv", "x", m2) // not recursive: not read
	put(t, dir, "e.csv", "abc", m2.Add(time.Second))
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range k.elems {
		d := decode(t, e, false)
		got = append(got, fmt.Sprintf("%d %s", d.ts, strings.Join(d.fields, " ")))
	}
	want := []string{
		fmt.Sprintf("1700000000123 %s 1 1700000000123", filepath.Join(dir, "a.csv")),
		fmt.Sprintf("1700000005000 %s 5 1700000005000", filepath.Join(dir, "b.csv")),
		fmt.Sprintf("1700000006000 %s 3 1700000006000", filepath.Join(dir, "e.csv")),
	}
	if !slices.Equal(got, want) {
		t.Errorf("elements\n%q\nwant\n%q", got, want)
	}
	if len(k.wms) == 0 || k.wms[len(k.wms)-1] != mtime.MaxTimestamp {
		t.Errorf("watermarks %v, want +inf last", k.wms)
	}
}

// TestLinesMode: each line once, keyed by its file's path, at the time in
// the file's name, "\r\n" and a last line without an end included; a
// file of a name without a time is not read, and said so.
func TestLinesMode(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "events-2026-11-30T07.log", "a\r\nb\n\nc", t0)
	put(t, dir, "events-latest.log", "x\n", t0)
	var mu sync.Mutex
	var warnings []string
	cfg := &fileio.WatchConfig{Dir: dir, Mode: fileio.ModeLines, Ready: fileio.ReadyRenamed, PollIntervalMillis: 5, MaxFiles: 1,
		Timestamp: fileio.TimeName, NameLayout: "events-2006-01-02T15.log"}
	k, wait := run(&Source{Config: cfg, Folder: OSFolder(dir), Name: "w", Batch: 2, Warnf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, fmt.Sprintf(f, a...))
	}})
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range k.elems {
		d := decode(t, e, true)
		got = append(got, fmt.Sprintf("%v %s %q", d.ts.ToTime().UTC().Format(time.RFC3339), filepath.Base(d.fields[0]), d.fields[1]))
	}
	want := []string{
		`2026-11-30T07:00:00Z events-2026-11-30T07.log "a"`,
		`2026-11-30T07:00:00Z events-2026-11-30T07.log "b"`,
		`2026-11-30T07:00:00Z events-2026-11-30T07.log ""`,
		`2026-11-30T07:00:00Z events-2026-11-30T07.log "c"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("elements\n%q\nwant\n%q", got, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "events-latest.log is not read") {
		t.Errorf("warnings %q, want one naming events-latest.log", warnings)
	}
}

// TestDrainAndMissingFolder: a watch of a folder that does not exist yet
// warns once and waits; files put in once it exists are read; a drain
// ends the unbounded watch with the watermark at +inf.
func TestDrainAndMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "later")
	var mu sync.Mutex
	var warnings []string
	drain := make(chan struct{})
	cfg := &fileio.WatchConfig{Dir: dir, Ready: fileio.ReadyRenamed, PollIntervalMillis: 5}
	k, wait := run(&Source{Config: cfg, Folder: OSFolder(dir), Name: "w", Drain: drain, Warnf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, fmt.Sprintf(f, a...))
	}})
	for {
		mu.Lock()
		n := len(warnings)
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	put(t, dir, "a", "", t0)
	k.waitElems(1)
	close(drain)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "does not exist") {
		t.Errorf("warnings %q, want one that the folder does not exist", warnings)
	}
	if len(k.elems) != 1 || k.wms[len(k.wms)-1] != mtime.MaxTimestamp {
		t.Errorf("%d elements, watermarks %v: want a, then +inf", len(k.elems), k.wms)
	}
}

// TestSymlinkOutside: a link in the folder to a file outside it is not
// followed out: a confined server reads nothing outside its folders.
func TestSymlinkOutside(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	put(t, outside, "secret", "s\n", t0)
	put(t, dir, "ok", "o\n", t0)
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	cfg := &fileio.WatchConfig{Dir: dir, Mode: fileio.ModeLines, Ready: fileio.ReadyRenamed, PollIntervalMillis: 5, StopAfterIdleMillis: 50}
	k, wait := run(&Source{Config: cfg, Folder: OSFolder(dir), Name: "w", Retried: func(error) {}})
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	for _, e := range k.elems {
		if d := decode(t, e, true); d.fields[1] != "o" {
			t.Errorf("read %q from %s", d.fields[1], d.fields[0])
		}
	}
}
