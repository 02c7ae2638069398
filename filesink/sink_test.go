package filesink

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/twophase/twophasetest"
	"github.com/weir-runner/weir/wire"
)

func bytesCodec(t *testing.T) *wire.Codec {
	t.Helper()
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
	return wire.NewCodec(win, val)
}

// elems encodes byte elements in the global window as the sink receives
// them: timestamp, one (empty) window, pane, length-prefixed bytes.
func elems(vals ...string) [][]byte {
	var out [][]byte
	for _, v := range vals {
		b := []byte{0x7f, 0xdf, 0x3b, 0x64, 0x5a, 0x1c, 0xac, 0x08} // the minimum timestamp
		b = append(b, 0, 0, 0, 1, 0x0f)                             // one window, pane: no firing
		b = append(b, byte(len(v)))
		out = append(out, append(b, v...))
	}
	return out
}

// driver is a file sink subtask: the driver and its sink.
type driver struct {
	*twophase.Driver
	*Sink
}

func sink(t *testing.T, fs vfs.FS, store *state.Store) driver {
	s := &Sink{Config: &fileio.WriteConfig{Dir: "/out", Suffix: ".txt"}, Name: "files", Subtask: 0, In: bytesCodec(t), FS: fs}
	return driver{&twophase.Driver{Sink: s, Pending: twophase.NewPending(store, "f/0", "files[0]"),
		Name: `file sink files[0]: dir "/out"`}, s}
}

// files returns the final files' contents, sorted, and how many
// temporary files there are.
func files(t *testing.T, fs vfs.FS) (final []string, temps int) {
	t.Helper()
	names, err := fs.List("/out")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			temps++
			continue
		}
		f, err := fs.Open(fs.PathJoin("/out", n))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(n, ".txt") {
			t.Errorf("file %q lacks the suffix", n)
		}
		final = append(final, string(b))
	}
	slices.Sort(final) // names hold random run tokens
	return final, temps
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantFiles(t *testing.T, fs vfs.FS, temps int, want ...string) {
	t.Helper()
	got, tn := files(t, fs)
	if !slices.Equal(got, want) || tn != temps {
		t.Errorf("final files %q and %d temporary, want %q and %d", got, tn, want, temps)
	}
}

// TestFileSinkCommitsOnCheckpointComplete: files appear only when the
// checkpoint covering them completes, one per epoch, one record a line.
func TestFileSinkCommitsOnCheckpointComplete(t *testing.T) {
	fs := vfs.NewMem()
	ctx := context.Background()
	s := sink(t, fs, twophasetest.Store(t))
	must(t, s.Process(ctx, 0, elems("a", "b")))
	must(t, s.Barrier(ctx, 1))
	must(t, s.Process(ctx, 0, elems("c")))
	wantFiles(t, fs, 2)
	must(t, s.CheckpointComplete(ctx, 1))
	wantFiles(t, fs, 1, "a\nb\n")
	must(t, s.Barrier(ctx, 2))
	must(t, s.Barrier(ctx, 3)) // an epoch without records makes no file
	must(t, s.CheckpointComplete(ctx, 3))
	wantFiles(t, fs, 0, "a\nb\n", "c\n")
	must(t, s.Process(ctx, 0, elems("d")))
	must(t, s.Finish(ctx))
	wantFiles(t, fs, 0, "a\nb\n", "c\n", "d\n")
}

// TestFileSinkCrashBeforeCommit: a crash after checkpoint 1's pre-commit
// and before its commit. The restored sink renames checkpoint 1's file,
// and removes the file of records written after the checkpoint, which the
// sources replay.
func TestFileSinkCrashBeforeCommit(t *testing.T) {
	fs := vfs.NewMem()
	ctx := context.Background()
	store := twophasetest.Store(t)
	s := sink(t, fs, store)
	must(t, s.Process(ctx, 0, elems("a", "b")))
	must(t, s.Barrier(ctx, 1))
	restore := twophasetest.Checkpoint(t, store, "f/0")
	must(t, s.Process(ctx, 0, elems("lost")))
	must(t, s.Barrier(ctx, 2)) // sealed, but checkpoint 2 never completes
	wantFiles(t, fs, 2)

	r := sink(t, fs, restore())
	must(t, r.Barrier(ctx, 2)) // the first call recovers
	wantFiles(t, fs, 0, "a\nb\n")
	must(t, r.Process(ctx, 0, elems("c")))
	must(t, r.Finish(ctx))
	wantFiles(t, fs, 0, "a\nb\n", "c\n")
}

// TestFileSinkCrashAfterCommitBeforeDelete: the files were renamed, the
// store not yet updated; renaming again is a no-op.
func TestFileSinkCrashAfterCommitBeforeDelete(t *testing.T) {
	fs := vfs.NewMem()
	ctx := context.Background()
	store := twophasetest.Store(t)
	s := sink(t, fs, store)
	must(t, s.Process(ctx, 0, elems("a")))
	must(t, s.Barrier(ctx, 1))
	restore := twophasetest.Checkpoint(t, store, "f/0")
	must(t, s.CheckpointComplete(ctx, 1))

	r := sink(t, fs, restore())
	must(t, r.Process(ctx, 0, elems("b")))
	if r.Sink.Committed != 0 {
		t.Errorf("the restored sink renamed %d files, want 0", r.Sink.Committed)
	}
	must(t, r.Finish(ctx))
	wantFiles(t, fs, 0, "a\n", "b\n")
}

// TestFileSinkLostFileFailsLoudly: a pending file that is neither at its
// temporary nor at its final name is lost output: the commit fails at
// once, naming it.
func TestFileSinkLostFileFailsLoudly(t *testing.T) {
	fs := vfs.NewMem()
	ctx := context.Background()
	s := sink(t, fs, twophasetest.Store(t))
	s.OnRetry = func(err error) { t.Errorf("retried %v", err) }
	must(t, s.Process(ctx, 0, elems("a")))
	must(t, s.Barrier(ctx, 1))
	must(t, fs.Remove("/out/"+s.tempName(0)))
	err := s.CheckpointComplete(ctx, 1)
	if !twophase.IsPermanent(err) || !strings.Contains(err.Error(), "output is lost") {
		t.Fatalf("CheckpointComplete = %v, want a permanent error naming the lost file", err)
	}
}

// TestFileSinkRetriesRename: a rename that fails is reported and retried.
func TestFileSinkRetriesRename(t *testing.T) {
	var fail atomic.Int32
	fail.Store(1)
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpRename && fail.Add(-1) >= 0 {
			return errors.New("injected: device busy")
		}
		return nil
	}))
	ctx := context.Background()
	s := sink(t, fs, twophasetest.Store(t))
	var retried []error
	s.OnRetry = func(err error) { retried = append(retried, err) }
	must(t, s.Process(ctx, 0, elems("a")))
	must(t, s.Barrier(ctx, 1))
	must(t, s.CheckpointComplete(ctx, 1))
	if len(retried) != 1 || !strings.Contains(retried[0].Error(), `file sink files[0]: dir "/out": commit of checkpoint 1`) {
		t.Errorf("retried %v, want one error naming the sink, dir and checkpoint", retried)
	}
	wantFiles(t, fs, 0, "a\n")
}

func TestFinalOf(t *testing.T) {
	s := &Sink{Config: &fileio.WriteConfig{Dir: "/out", Prefix: "my-e", Suffix: ".txt"}, Subtask: 3, lineage: "ab"}
	for _, tc := range []struct {
		temp, final string
		ok, mine    bool
	}{
		{".my-e-ab-cd-s3-e7.tmp", "my-e-ab-cd-s3-e7.txt", true, true},
		{".my-e-ab-cd-s13-e7.tmp", "my-e-ab-cd-s13-e7.txt", true, false}, // another subtask
		{".my-e-zz-cd-s3-e7.tmp", "my-e-zz-cd-s3-e7.txt", true, false},   // another lineage
		{".my-e-ab-cd-s3-e7.txt", "", false, false},
		{".part-ab-cd-s3-e7.tmp", "", false, false},
	} {
		final, ok := s.finalOf(tc.temp)
		if final != tc.final || ok != tc.ok || s.mine(tc.temp) != tc.mine {
			t.Errorf("finalOf(%q) = %q, %v, mine %v; want %q, %v, %v", tc.temp, final, ok, s.mine(tc.temp), tc.final, tc.ok, tc.mine)
		}
	}
}
