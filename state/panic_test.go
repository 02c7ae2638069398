package state

import (
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestCommitPanicIsAnError: Pebble panics on a write to a database it has
// closed (a write racing the end of its job would be one). The commit runs
// on a goroutine of its own, where the panic would end the process; it is
// the write's error instead, with the stack.
func TestCommitPanicIsAnError(t *testing.T) {
	s, err := Open(Options{Dir: "db", FS: vfs.NewMem(), MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	b := s.db.NewBatch()
	if err := b.Set([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
	err = s.commit(b, "a write after the end")
	if err == nil || !strings.Contains(err.Error(), "panic: pebble: closed") || !strings.Contains(err.Error(), "(*Store).commit") {
		t.Fatalf("commit = %v, want the panic with its stack", err)
	}
}
