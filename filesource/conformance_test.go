package filesource

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/connector/conformance"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/wire"
)

// watchHarness feeds a folder three parts of four files each, renamed
// into place with modification times in order; the watch is bounded by
// their number. In lines mode each file has 25 lines, emitted 7 at a
// time, so that barriers fall inside files and a restore resumes one at
// its offset; in files mode each file is a value.
type watchHarness struct {
	dir   string
	lines bool
	parts [][]string
	codec *wire.Codec
}

const (
	harnessParts, harnessFiles, harnessLines = 3, 4, 25
)

func newWatchHarness(t *testing.T, lines bool) *watchHarness {
	coders := map[string]*pipepb.Coder{
		"b":  {Spec: &pipepb.FunctionSpec{Urn: wire.URNBytes}},
		"gw": {Spec: &pipepb.FunctionSpec{Urn: wire.URNGlobalWindow}},
	}
	win, err := wire.MeasureFor(coders, "gw")
	if err != nil {
		t.Fatal(err)
	}
	val, err := wire.MeasureFor(coders, "b")
	if err != nil {
		t.Fatal(err)
	}
	h := &watchHarness{dir: t.TempDir(), lines: lines, codec: wire.NewCodec(win, val)}
	for p := range harnessParts {
		var vals []string
		for f := range harnessFiles {
			if !lines {
				vals = append(vals, h.name(p, f))
				continue
			}
			for l := range harnessLines {
				vals = append(vals, fmt.Sprintf("p%d-f%d-l%02d", p, f, l))
			}
		}
		h.parts = append(h.parts, vals)
	}
	return h
}

func (h *watchHarness) name(part, file int) string { return fmt.Sprintf("in-%d-%d.txt", part, file) }

func (h *watchHarness) New(testing.TB) executor.Source {
	mode := fileio.ModeFiles
	if h.lines {
		mode = fileio.ModeLines
	}
	cfg := &fileio.WatchConfig{Dir: h.dir, Mode: mode, Ready: fileio.ReadyRenamed, PollIntervalMillis: 5,
		MaxFiles: harnessParts * harnessFiles}
	return &Source{Config: cfg, Folder: OSFolder(h.dir), Name: "watch", Batch: 7}
}

func (h *watchHarness) Parts() [][]string { return h.parts }

// Feed writes part i's files under hidden names, dates them, and renames
// them into place.
func (h *watchHarness) Feed(t testing.TB, part int) {
	for f := range harnessFiles {
		tmp := filepath.Join(h.dir, ".tmp-"+h.name(part, f))
		var body strings.Builder
		for l := range harnessLines {
			fmt.Fprintf(&body, "p%d-f%d-l%02d\n", part, f, l)
		}
		if err := os.WriteFile(tmp, []byte(body.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		mod := time.Date(2026, 1, 1, 0, 0, part*harnessFiles+f, 0, time.UTC)
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
	v, err := h.codec.ValueOf(e)
	if err != nil {
		return "", err
	}
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
