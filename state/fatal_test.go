package state

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestFullDiskAtTheManifestFailsTheStore: a disk that fills after a
// flush wrote its table fails the MANIFEST write that records it, and
// Pebble calls its logger's Fatalf, whose default ends the process (the
// test binary would exit here, with every job of a server). The store's
// logger fails the store instead: the process goes on, the store's error
// names its folder and the disk's error, later writes return it, and
// Close returns.
func TestFullDiskAtTheManifestFailsTheStore(t *testing.T) {
	var hits atomic.Int64
	full := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpCreate, errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync,
			errorfs.OpFileSyncData, errorfs.OpFileFlush, errorfs.OpRename:
			if strings.Contains(op.Path, "MANIFEST") {
				hits.Add(1)
				return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
			}
		}
		return nil
	})}
	s, err := Open(Options{Dir: "db", FS: errorfs.Wrap(vfs.NewMem(), full), MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	sh := s.NewShuffle("full")
	add := func(i int) error {
		if err := sh.Add(i%16, 9, []byte("w"), []byte(fmt.Sprint("k", i)), 1, []byte("value")); err != nil {
			return err
		}
		return sh.Flush()
	}
	for i := range 100 {
		if err := add(i); err != nil {
			t.Fatal(err)
		}
	}
	full.On()
	if _, err := s.db.AsyncFlush(); err != nil {
		t.Fatal(err)
	}
	<-s.failedCh // the flush's table is written; recording it is not
	err = s.Err()
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "MANIFEST") ||
		!strings.Contains(err.Error(), "the store in db failed") {
		t.Errorf("the store's error %q does not name the store, its MANIFEST and the full disk", err)
	}
	if hits.Load() == 0 {
		t.Error("no MANIFEST write met the full disk")
	}
	if err := add(100); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("a write to the failed store returned %v, want its failure", err)
	}
	full.Off()
	_ = s.Close() // must return; whether with an error depends on Pebble's retries
}
