package filesink

import (
	"io"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/connector/conformance"
	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/twophase"
)

// fileHarness is a file sink over a folder of an in-memory file system.
type fileHarness struct {
	t  *testing.T
	fs vfs.FS
}

func (h *fileHarness) New(testing.TB) twophase.Sink {
	return &Sink{Config: &fileio.WriteConfig{Dir: "/out", Suffix: ".txt"}, Name: "files", In: bytesCodec(h.t), FS: h.fs}
}

func (h *fileHarness) Element(v string) []byte { return elems(v)[0] }

func (h *fileHarness) names(t testing.TB) []string {
	names, err := h.fs.List("/out")
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// Committed reads the lines of the final files.
func (h *fileHarness) Committed(t testing.TB) []string {
	var out []string
	for _, n := range h.names(t) {
		if strings.HasPrefix(n, ".") {
			continue
		}
		f, err := h.fs.Open(h.fs.PathJoin("/out", n))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
	}
	return out
}

// Staged lists the temporary files.
func (h *fileHarness) Staged(t testing.TB) []string {
	var out []string
	for _, n := range h.names(t) {
		if strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	return out
}

func TestConformance(t *testing.T) {
	conformance.RunSink(t, "files", func(t *testing.T) conformance.SinkHarness {
		return &fileHarness{t: t, fs: vfs.NewMem()}
	})
}
