package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

func openMem(t *testing.T, fs vfs.FS, keep int) *Storage {
	t.Helper()
	s, err := OpenStorage(StorageOptions{Dir: "/job/checkpoints", FS: fs, Keep: keep, Job: "wordcount"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeCheckpoint writes checkpoint id with two files and a subtask's
// metadata.
func writeCheckpoint(s *Storage, id ID) error {
	w, err := s.Begin(id)
	if err != nil {
		return err
	}
	if err := writeFiles(w, id); err != nil {
		w.Abort()
		return err
	}
	if err := w.Commit(t0, &ManifestStats{Bytes: 42, Subtasks: 1}); err != nil {
		w.Abort()
		return err
	}
	return nil
}

func writeFiles(w *Writer, id ID) error {
	if err := w.WriteFile("n1-s0.sst", []byte(strings.Repeat(fmt.Sprint("state of ", id, ";"), 100))); err != nil {
		return err
	}
	f, err := w.Create("n1-s0.inflight")
	if err != nil {
		return err
	}
	for i := range 10 {
		if _, err := fmt.Fprintf(f, "batch %d of %d\n", i, id); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	w.SetSubtask(Task{1, 0}, []byte(fmt.Sprint("position ", id)))
	return nil
}

func TestOnlyCommittedCheckpointsAreVisible(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs, 3)
	w, err := s.Begin(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFiles(w, 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Latest(); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("Latest before commit = %v, want ErrNoCheckpoint", err)
	}
	if err := w.Commit(t0, nil); err != nil {
		t.Fatal(err)
	}
	c, corrupt, err := s.Latest()
	if err != nil || len(corrupt) > 0 {
		t.Fatalf("Latest = %v, %v", corrupt, err)
	}
	m := c.Manifest
	if m.Checkpoint != 1 || m.Job != "wordcount" || m.KeyGroups != 128 || len(m.Files) != 2 ||
		len(m.Subtasks) != 1 || string(m.Subtasks[0].Meta) != "position 1" || !m.Time.Equal(t0) {
		t.Fatalf("manifest %+v", m)
	}
	if names, _ := fs.List("/job/checkpoints"); len(names) != 1 || names[0] != "chk-1" {
		t.Fatalf("root holds %v, want only chk-1", names)
	}
	if _, err := w.Create("late"); err == nil {
		t.Error("Create after Commit succeeded")
	}
}

func TestCommitRefusesOpenFiles(t *testing.T) {
	s := openMem(t, vfs.NewMem(), 3)
	w, _ := s.Begin(1)
	f, _ := w.Create("a")
	if err := w.Commit(t0, nil); err == nil || !strings.Contains(err.Error(), "still open") {
		t.Fatalf("Commit with an open file = %v", err)
	}
	f.Close()
	if _, err := w.Create("a"); err == nil {
		t.Error("a file created twice")
	}
	if _, err := f.WriteAt([]byte("x"), 0); err == nil {
		t.Error("WriteAt on a checksummed file succeeded")
	}
}

func TestKeepsTheLastN(t *testing.T) {
	s := openMem(t, vfs.NewMem(), 3)
	for id := ID(1); id <= 5; id++ {
		if err := writeCheckpoint(s, id); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := s.List()
	if err != nil || fmt.Sprint(ids) != "[5 4 3]" {
		t.Fatalf("List = %v, %v; want [5 4 3]", ids, err)
	}
}

func TestLatestReportsCorruptCheckpoints(t *testing.T) {
	file := "/job/checkpoints/chk-2/n1-s0.sst"
	tests := []struct {
		name    string
		corrupt func(fs vfs.FS) error
		file    string
		problem Problem
	}{
		{"truncated", func(fs vfs.FS) error { return rewrite(fs, file, func(b []byte) []byte { return b[:len(b)/2] }) },
			"n1-s0.sst", Truncated},
		{"byte flipped", func(fs vfs.FS) error { return rewrite(fs, file, func(b []byte) []byte { b[7] ^= 1; return b }) },
			"n1-s0.sst", Mismatch},
		{"appended to", func(fs vfs.FS) error { return rewrite(fs, file, func(b []byte) []byte { return append(b, 0) }) },
			"n1-s0.sst", Oversized},
		{"deleted", func(fs vfs.FS) error { return fs.Remove(file) }, "n1-s0.sst", Missing},
		{"manifest deleted", func(fs vfs.FS) error { return fs.Remove("/job/checkpoints/chk-2/MANIFEST") }, "MANIFEST", Missing},
		{"manifest altered", func(fs vfs.FS) error {
			return rewrite(fs, "/job/checkpoints/chk-2/MANIFEST", func(b []byte) []byte {
				return []byte(strings.Replace(string(b), "wordcount", "wordcounT", 1))
			})
		}, "MANIFEST", BadManifest},
		{"manifest truncated", func(fs vfs.FS) error {
			return rewrite(fs, "/job/checkpoints/chk-2/MANIFEST", func(b []byte) []byte { return b[:40] })
		}, "MANIFEST", BadManifest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := vfs.NewMem()
			s := openMem(t, fs, 3)
			for id := ID(1); id <= 2; id++ {
				if err := writeCheckpoint(s, id); err != nil {
					t.Fatal(err)
				}
			}
			if err := tt.corrupt(fs); err != nil {
				t.Fatal(err)
			}
			c, corrupt, err := s.Latest()
			if err != nil {
				t.Fatal(err)
			}
			if c.Manifest.Checkpoint != 1 {
				t.Errorf("Latest is %d, want the previous, 1", c.Manifest.Checkpoint)
			}
			if len(corrupt) != 1 || corrupt[0].ID != 2 || corrupt[0].File != tt.file || corrupt[0].Problem != tt.problem {
				t.Fatalf("reported %v, want checkpoint 2's %s %s", corrupt, tt.file, tt.problem)
			}
			msg := corrupt[0].Error()
			if !strings.Contains(msg, "checkpoint 2") || !strings.Contains(msg, tt.file) || !strings.Contains(msg, string(tt.problem)) {
				t.Errorf("error %q does not name the checkpoint, file and problem", msg)
			}
			if _, err := s.Verify(2); err == nil {
				t.Error("Verify(2) accepted the corrupt checkpoint")
			}
		})
	}
}

func TestNoValidCheckpoint(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs, 3)
	if err := writeCheckpoint(s, 1); err != nil {
		t.Fatal(err)
	}
	fs.Remove("/job/checkpoints/chk-1/n1-s0.inflight")
	_, corrupt, err := s.Latest()
	if !errors.Is(err, ErrNoCheckpoint) || len(corrupt) != 1 {
		t.Fatalf("Latest = %v, %v; want ErrNoCheckpoint and one report", corrupt, err)
	}
}

func rewrite(fs vfs.FS, path string, edit func([]byte) []byte) error {
	f, err := fs.Open(path)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return err
	}
	return writeSynced(fs, path, edit(b))
}

func TestLeftoverTmpIsIgnoredAndRemoved(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs, 3)
	if err := writeCheckpoint(s, 1); err != nil {
		t.Fatal(err)
	}
	// A crash in the middle of checkpoint 2.
	w, err := s.Begin(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFiles(w, 2); err != nil {
		t.Fatal(err)
	}
	c, corrupt, err := s.Latest()
	if err != nil || len(corrupt) != 0 || c.Manifest.Checkpoint != 1 {
		t.Fatalf("Latest with a .tmp folder = %v, %v, %v; want 1", c, corrupt, err)
	}
	// The restarted job opens the storage again.
	openMem(t, fs, 3)
	if names, _ := fs.List("/job/checkpoints"); fmt.Sprint(names) != "[chk-1]" {
		t.Fatalf("after reopening the root holds %v, want [chk-1]", names)
	}
}

// TestListCompleteOnlyReads: ListComplete, which reads a root without its
// lock, lists the completed checkpoints and leaves another job's
// checkpoint in flight where it is; a root not made yet lists none.
func TestListCompleteOnlyReads(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs, 3)
	for _, id := range []ID{1, 2} {
		if err := writeCheckpoint(s, id); err != nil {
			t.Fatal(err)
		}
	}
	w, err := s.Begin(3)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFiles(w, 3); err != nil {
		t.Fatal(err)
	}
	ids, err := ListComplete(fs, "/job/checkpoints")
	if err != nil || fmt.Sprint(ids) != "[2 1]" {
		t.Fatalf("ListComplete = %v, %v; want [2 1]", ids, err)
	}
	if err := w.Commit(t0, &ManifestStats{Bytes: 42, Subtasks: 1}); err != nil {
		t.Fatalf("the checkpoint in flight, after a ListComplete: %v", err)
	}
	if ids, err := ListComplete(fs, "/job/none"); err != nil || ids != nil {
		t.Fatalf("ListComplete of a missing root = %v, %v; want none", ids, err)
	}
}

// takesSpace reports whether an operation needs free space: on a full disk
// it fails with ENOSPC, while reads and removals work.
func takesSpace(k errorfs.OpKind) bool {
	switch k {
	case errorfs.OpCreate, errorfs.OpLink, errorfs.OpRename, errorfs.OpReuseForWrite, errorfs.OpMkdirAll,
		errorfs.OpFileClose, errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync, errorfs.OpFileSyncData,
		errorfs.OpFileSyncTo, errorfs.OpFileFlush, errorfs.OpFilePreallocate:
		return true
	}
	return false
}

// TestFullDiskFailsOnlyTheCheckpoint fills the disk at each operation of
// a checkpoint that takes space in turn (making its folder, creating,
// writing, syncing and closing its files, the manifest, the rename that
// publishes it, the syncs of the folders): either that checkpoint fails
// with the disk's error and nothing of it is visible, the previous staying
// the latest, or (a failed sync of the root after the rename, which the
// checkpoint survives) it is complete and verifies. Never is a checkpoint
// taken for complete that is not, now or after the storage is reopened.
func TestFullDiskFailsOnlyTheCheckpoint(t *testing.T) {
	var ops int32 // of one checkpoint, counted by a run that fails none
	failed := 0
	for failAt := int32(0); failAt == 0 || failAt <= ops; failAt++ {
		fs := vfs.NewMem()
		var n, armed atomic.Int32
		inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
			if armed.Load() == 0 || !takesSpace(op.Kind) {
				return nil
			}
			if n.Add(1) == failAt {
				return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
			}
			return nil
		})
		s := openMem(t, errorfs.Wrap(fs, inj), 3)
		if err := writeCheckpoint(s, 1); err != nil {
			t.Fatal(err)
		}
		armed.Store(1)
		err := writeCheckpoint(s, 2)
		armed.Store(0)
		if failAt == 0 {
			if err != nil {
				t.Fatal(err)
			}
			ops = n.Load()
			continue
		}
		if err != nil {
			failed++
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("op %d: error %v, want ENOSPC", failAt, err)
			}
			if names, _ := fs.List("/job/checkpoints"); fmt.Sprint(names) != "[chk-1]" {
				t.Fatalf("op %d failed: root holds %v, want only chk-1", failAt, names)
			}
		}
		for _, reopened := range []bool{false, true} {
			if reopened {
				s = openMem(t, fs, 3)
			}
			c, corrupt, lerr := s.Latest()
			if lerr != nil || len(corrupt) != 0 {
				t.Fatalf("op %d of %d failed (reopened %v): Latest = %v, %v, %v", failAt, ops, reopened, c, corrupt, lerr)
			}
			switch {
			case err == nil && c.Manifest.Checkpoint != 2:
				t.Fatalf("op %d of %d failed, checkpoint 2 succeeded, yet Latest is %d", failAt, ops, c.Manifest.Checkpoint)
			case err != nil && c.Manifest.Checkpoint != 1:
				t.Fatalf("op %d of %d failed (%v), yet Latest is %d", failAt, ops, err, c.Manifest.Checkpoint)
			}
		}
	}
	t.Logf("failed each of the %d operations that take space in turn: %d failed the checkpoint", ops, failed)
	if failed < 10 {
		t.Errorf("only %d of %d failures failed the checkpoint", failed, ops)
	}
}

// TestCrashAtEveryStepOfACheckpoint takes, before every file system
// operation from opening a new root through writing checkpoints 1 and 2,
// the state a machine crash would leave at that instant (Pebble's
// crashable MemFS: what was synced, and none, half or all of what was
// not). Reopened there, the storage never reports a corrupt checkpoint,
// and its latest is one whose publishing rename had begun, or none before
// checkpoint 1's.
func TestCrashAtEveryStepOfACheckpoint(t *testing.T) {
	mem := vfs.NewCrashableMem()
	rng := rand.New(rand.NewPCG(1, 2))
	type crash struct {
		fs        *vfs.MemFS
		published ID // the newest checkpoint whose rename had been called
		unsynced  int
		operation int
	}
	var crashes []crash
	var published atomic.Uint64
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		for _, pct := range []int{0, 50, 100} {
			crashes = append(crashes, crash{fs: mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rng}),
				published: ID(published.Load()), unsynced: pct, operation: len(crashes) / 3})
		}
		if op.Kind == errorfs.OpRename {
			if id, ok := parseDir(op.Path[strings.LastIndexByte(op.Path, '/')+1:], ".tmp"); ok {
				published.Store(uint64(id)) // the rename may land from now on
			}
		}
		return nil
	})
	s := openMem(t, errorfs.Wrap(mem, inj), 3)
	for id := ID(1); id <= 2; id++ {
		if err := writeCheckpoint(s, id); err != nil {
			t.Fatal(err)
		}
	}
	if published.Load() != 2 {
		t.Fatalf("renames of checkpoints seen up to %d, want 2", published.Load())
	}
	for _, c := range crashes {
		at := fmt.Sprintf("crash before op %d (%d%% of unsynced data kept, %d published)", c.operation, c.unsynced, c.published)
		s, err := OpenStorage(StorageOptions{Dir: "/job/checkpoints", FS: c.fs})
		if err != nil {
			t.Fatalf("%s: reopen: %v", at, err)
		}
		got, corrupt, err := s.Latest()
		switch {
		case len(corrupt) != 0:
			t.Fatalf("%s: corrupt checkpoints %v", at, corrupt)
		case errors.Is(err, ErrNoCheckpoint) && c.published <= 1:
		case err != nil:
			t.Fatalf("%s: Latest: %v", at, err)
		case got.Manifest.Checkpoint > c.published || got.Manifest.Checkpoint < c.published-1:
			t.Fatalf("%s: Latest is checkpoint %d", at, got.Manifest.Checkpoint)
		}
	}
	t.Logf("%d crash points, each with 0, 50 and 100%% of the unsynced data", len(crashes)/3)
}
