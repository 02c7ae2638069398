// Package twophasetest helps test exactly-once sinks: in-memory stores,
// and the crash-and-restore of a sink's namespace as a checkpoint does it.
package twophasetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/state"
)

var n atomic.Int64

// Store opens a store on an in-memory file system, closed with the test.
func Store(t testing.TB) *state.Store {
	t.Helper()
	s, err := state.Open(state.Options{Dir: fmt.Sprintf("/store-%d", n.Add(1)), FS: vfs.NewMem(),
		MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Checkpoint exports namespace ns of src as of now, as the runner does at a
// barrier, and returns a function that imports it into a fresh store: the
// store a restored job starts from. Writes to src after Checkpoint returns
// are not in it.
func Checkpoint(t testing.TB, src *state.Store, ns string) (restore func() *state.Store) {
	t.Helper()
	fs := vfs.NewMem()
	name := fmt.Sprintf("/chk-%d.sst", n.Add(1))
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	st, err := snap.Export([]string{ns}, func() (vfs.File, error) { return fs.Create(name, vfs.WriteCategoryUnspecified) })
	if err != nil {
		t.Fatal(err)
	}
	return func() *state.Store {
		t.Helper()
		dst := Store(t)
		if st.Records == 0 {
			return dst
		}
		if err := dst.Import(context.Background(), fs, []string{name}); err != nil {
			t.Fatal(err)
		}
		return dst
	}
}
