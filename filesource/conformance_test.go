package filesource

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-runner/weir/connector/conformance"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/wire"
)

// watchHarness feeds a folder three parts of files, renamed
// into place with modification times in order; the watch is bounded by
// their number. In lines mode each file has 200 lines, emitted 7 at a
// time, so that barriers fall inside files and a restore resumes one at
// its offset; in files mode each file is a value, emitted one at a time.
type watchHarness struct {
	dir   string
	lines bool
	parts [][]string
}

// The input: 3 parts; in lines mode of 4 files of 200 lines, in files
// mode of 200 files, so that a part is more than the edge to the
// collector buffers (16 batches) and the barrier a case asks for lands inside it.
const harnessParts, harnessLines = 3, 200

func (h *watchHarness) files() int {
	if h.lines {
		return 4
	}
	return 200
}

func newWatchHarness(t *testing.T, lines bool) *watchHarness {
	h := &watchHarness{dir: t.TempDir(), lines: lines}
	for p := range harnessParts {
		var vals []string
		for f := range h.files() {
			if !lines {
				vals = append(vals, h.name(p, f))
				continue
			}
			for l := range harnessLines {
				vals = append(vals, fmt.Sprintf("p%d-f%d-l%03d", p, f, l))
			}
		}
		h.parts = append(h.parts, vals)
	}
	return h
}

func (h *watchHarness) name(part, file int) string { return fmt.Sprintf("in-%d-%d.txt", part, file) }

func (h *watchHarness) New(testing.TB) executor.Source {
	// A barrier must be able to fall after the first value of a part.
	mode, batch := fileio.ModeFiles, 1
	if h.lines {
		mode, batch = fileio.ModeLines, 7
	}
	cfg := &fileio.WatchConfig{Dir: h.dir, Mode: mode, Ready: fileio.ReadyRenamed, PollIntervalMillis: 5,
		MaxFiles: int64(harnessParts * h.files())}
	return &Source{Config: cfg, Folder: OSFolder(h.dir), Name: "watch", Batch: batch}
}

func (h *watchHarness) Parts() [][]string { return h.parts }

// Feed writes part i's files under hidden names, dates them, and renames
// them into place.
func (h *watchHarness) Feed(t testing.TB, part int) {
	for f := range h.files() {
		tmp := filepath.Join(h.dir, ".tmp-"+h.name(part, f))
		var body strings.Builder
		for l := range harnessLines {
			fmt.Fprintf(&body, "p%d-f%d-l%03d\n", part, f, l)
		}
		if err := os.WriteFile(tmp, []byte(body.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		mod := time.Date(2026, 1, 1, 0, 0, part*h.files()+f, 0, time.UTC)
		if err := os.Chtimes(tmp, mod, mod); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(h.dir, h.name(part, f))); err != nil {
			t.Fatal(err)
		}
	}
}

// Value decodes a line's KV (its value) or a file's row (its base name).
func (h *watchHarness) Value(e []byte) (string, error) {
	// The header: time, one window (the global one: no bytes), the pane.
	if len(e) < 8+4+1 {
		return "", wire.ErrShort
	}
	v := e[8+4+1:]
	first, rest, err := nested(v)
	if err != nil {
		return "", err
	}
	if h.lines {
		line, _, err := nested(rest)
		return string(line), err
	}
	// A length-prefixed row: field count, empty null bitmap, path.
	if len(first) < 2 || first[0] != 3 || first[1] != 0 {
		return "", fmt.Errorf("row %x: want 3 fields and no nulls", first)
	}
	p, _, err := nested(first[2:])
	return filepath.Base(string(p)), err
}

// nested reads a length-prefixed byte string.
func nested(b []byte) (v, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, wire.ErrShort
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

func TestConformance(t *testing.T) {
	t.Run("lines", func(t *testing.T) {
		conformance.RunSource(t, "file watch (lines)", func(t *testing.T) conformance.SourceHarness { return newWatchHarness(t, true) })
	})
	t.Run("files", func(t *testing.T) {
		conformance.RunSource(t, "file watch (files)", func(t *testing.T) conformance.SourceHarness { return newWatchHarness(t, false) })
	})
}
