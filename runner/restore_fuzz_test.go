package runner

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/executor"
)

// FuzzReadCheckpoint reads a checkpoint folder whose MANIFEST is any
// bytes, as a restore or `weir serve --restore` of a savepoint finds them
// on disk: either as they are, or (sealed) with the SHA-256 that makes its
// body pass the checksum, so the fuzzer reaches what is read from a
// manifest that verifies. Verifying, matching the graph and reading the
// subtasks' metadata and in-flight data give a restore point or an error,
// never a panic: a corrupt checkpoint must not end the server.
func FuzzReadCheckpoint(f *testing.F) {
	graph := []checkpoint.GraphNode{{Stage: "s0", Name: "read", Parallelism: 1}, {Stage: "s1", Name: "group", Parallelism: 2}}
	meta, err := json.Marshal(subtaskMeta{Records: 1, InFlightFile: "n1-s0.inflight", Watermarks: []int64{5}, State: []byte(`{"seq":3}`)})
	if err != nil {
		f.Fatal(err)
	}
	body, err := json.Marshal(checkpoint.Manifest{Version: 1, Checkpoint: 7, Job: "j", KeyGroups: checkpoint.KeyGroups, Graph: graph,
		Files:    []checkpoint.File{{Name: "n1-s0.inflight", Size: 4, SHA256: sha([]byte{0, 0, 1, 0})}},
		Subtasks: []checkpoint.SubtaskMeta{{Node: 1, Subtask: 0, Meta: meta}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body, true)
	f.Add([]byte(`{"sha256":"00","manifest":{}}`), false)
	f.Fuzz(func(t *testing.T, b []byte, seal bool) {
		if seal {
			var c bytes.Buffer
			if json.Compact(&c, b) != nil {
				return
			}
			var err error
			if b, err = json.Marshal(map[string]any{"sha256": sha(c.Bytes()), "manifest": json.RawMessage(c.Bytes())}); err != nil {
				return
			}
		}
		fs := vfs.NewMem()
		if err := fs.MkdirAll("sp", 0o755); err != nil {
			t.Fatal(err)
		}
		writeMem(t, fs, "sp/"+checkpoint.ManifestName, b)
		writeMem(t, fs, "sp/n1-s0.inflight", []byte{0, 0, 1, 0})
		c, err := checkpoint.OpenSavepoint(fs, "sp")
		if err != nil {
			return
		}
		_ = checkpoint.CheckGraph(&c.Manifest, graph)
		_, _ = checkpoint.MatchGraph(&c.Manifest, graph, checkpoint.MatchOptions{HasState: func(int) bool { return true }})
		rp, _, err := readRestorePoint(fs, c)
		if err != nil {
			return
		}
		for _, rs := range rp.subtasks {
			_ = executor.DecodeInFlight(rs.InFlight, func(ch, port int, elems [][]byte) error { return nil })
		}
	})
}

func writeMem(t *testing.T, fs vfs.FS, name string, b []byte) {
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
