// Package filesink is the runner side of fileio.Write: an exactly-once
// file sink with two-phase commit (package twophase has the protocol).
//
// Each sink subtask writes the records of an epoch to a hidden temporary
// file in the target folder, one record a line. At Barrier(N) the file is
// flushed, synced and closed, and its name goes into the store under its
// epoch (the pre-commit: the checkpoint's snapshot holds the name). When
// checkpoint C completes, every file of an epoch below C is renamed into
// place, and its name leaves the store. A rename is the commit and its own
// marker: renaming a file that was renamed already (its temporary name
// gone, its final name there) is a no-op, so a restored sink renames the
// names its snapshot holds again without harm. Temporary files of the
// subtask that the restored store does not name were written after the
// checkpoint, and are removed: the sources replay their records.
package filesink

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/wire"
)

// Sink is the executor operator of one file sink subtask. It implements
// executor.CheckpointListener.
type Sink struct {
	Config  *fileio.WriteConfig
	Name    string // names the sink in errors
	Subtask int
	Pending *twophase.Pending
	// In decodes the input's windowed values (bytes or string elements).
	In *wire.Codec
	// FS is the file system; default the operating system's.
	FS vfs.FS
	// OnError hears each failed commit that is retried; nil drops them.
	OnError func(error)

	started bool
	run     string
	epoch   executor.BarrierID // the open epoch: the newest barrier seen
	file    vfs.File           // the open epoch's temporary file; nil before its first record
	w       *bufio.Writer
	// Committed counts the files renamed into place, for tests.
	Committed int
}

// tempName and finalName name the files of an epoch. The run token keeps
// a job started afresh, whose epochs start again at 0, from overwriting
// an earlier run's files.
func (s *Sink) tempName(epoch executor.BarrierID) string {
	return fmt.Sprintf(".%s-%s-s%d-e%d.tmp", s.Config.FilePrefix(), s.run, s.Subtask, epoch)
}

func (s *Sink) finalName(epoch executor.BarrierID) string {
	return fmt.Sprintf("%s-%s-s%d-e%d%s", s.Config.FilePrefix(), s.run, s.Subtask, epoch, s.Config.Suffix)
}

func (s *Sink) path(name string) string { return s.FS.PathJoin(s.Config.Dir, name) }

func (s *Sink) errorf(format string, args ...any) error {
	return fmt.Errorf("file sink %s[%d]: dir %q: %s", s.Name, s.Subtask, s.Config.Dir, fmt.Sprintf(format, args...))
}

// start recovers once: it removes the subtask's temporary files the store
// does not name, then commits the epochs the store holds (all sealed by
// the checkpoint it was restored from, which completed).
func (s *Sink) start(ctx context.Context) error {
	if s.started {
		return nil
	}
	if s.FS == nil {
		s.FS = vfs.Default
	}
	run, err := s.Pending.Run()
	if err != nil {
		return err
	}
	sealed, err := s.Pending.Sealed()
	if err != nil {
		return err
	}
	s.started, s.run, s.epoch = true, run, sealed
	if err := s.FS.MkdirAll(s.Config.Dir, 0o755); err != nil {
		return s.errorf("%v", err)
	}
	keep := map[string]bool{}
	if err := s.Pending.Read(0, sealed, func(_ executor.BarrierID, v []byte) error {
		keep[string(v)] = true
		return nil
	}); err != nil {
		return err
	}
	names, err := s.FS.List(s.Config.Dir)
	if err != nil {
		return s.errorf("%v", err)
	}
	mine := fmt.Sprintf(".%s-%s-s%d-e", s.Config.FilePrefix(), s.run, s.Subtask)
	for _, n := range names {
		if strings.HasPrefix(n, mine) && strings.HasSuffix(n, ".tmp") && !keep[n] {
			if err := s.FS.Remove(s.path(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return s.errorf("remove %s, not in the checkpoint: %v", n, err)
			}
		}
	}
	return s.commit(ctx, sealed)
}

// Process implements executor.Operator: each element's bytes and a
// newline go to the open epoch's temporary file.
func (s *Sink) Process(ctx context.Context, _ int, elems [][]byte) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	if s.file == nil {
		f, err := s.FS.Create(s.path(s.tempName(s.epoch)), vfs.WriteCategoryUnspecified)
		if err != nil {
			return s.errorf("%v", err)
		}
		s.file, s.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	for _, e := range elems {
		v, err := s.In.ValueOf(e)
		if err != nil {
			return s.errorf("%v", err)
		}
		n, k := binary.Uvarint(v)
		if k <= 0 || uint64(len(v)-k) < n {
			return s.errorf("element: %v", wire.ErrShort)
		}
		s.w.Write(v[k : k+int(n)])
		if err := s.w.WriteByte('\n'); err != nil {
			return s.errorf("write %s: %v", s.tempName(s.epoch), err)
		}
	}
	return nil
}

// seal flushes, syncs and closes the open epoch's file, and records its
// name in the store under the epoch.
func (s *Sink) seal() error {
	if s.file == nil {
		return nil
	}
	name := s.tempName(s.epoch)
	err := s.w.Flush()
	if err == nil {
		err = s.file.Sync()
	}
	if cerr := s.file.Close(); err == nil {
		err = cerr
	}
	s.file, s.w = nil, nil
	if err != nil {
		return s.errorf("pre-commit %s: %v", name, err)
	}
	return s.Pending.Append(s.epoch, [][]byte{[]byte(name)})
}

// Watermark implements executor.Operator: a sink has no output.
func (s *Sink) Watermark(context.Context, int, mtime.Time) error { return nil }

// Barrier implements executor.Operator: the pre-commit.
func (s *Sink) Barrier(ctx context.Context, id executor.BarrierID) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	if id <= s.epoch {
		return nil
	}
	if err := s.seal(); err != nil {
		return err
	}
	s.epoch = id
	return s.Pending.Seal(id)
}

// CheckpointComplete implements executor.CheckpointListener.
func (s *Sink) CheckpointComplete(ctx context.Context, id executor.BarrierID) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	return s.commit(ctx, id)
}

// Finish implements executor.Operator: at the end of the input every
// file is committed, the open epoch's too.
func (s *Sink) Finish(ctx context.Context) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	if err := s.seal(); err != nil {
		return err
	}
	return s.commit(ctx, s.epoch+1)
}

// commit renames the files of every epoch below bound into place and
// drops their names from the store.
func (s *Sink) commit(ctx context.Context, bound executor.BarrierID) error {
	var names []string
	if err := s.Pending.Read(0, bound, func(_ executor.BarrierID, v []byte) error {
		names = append(names, string(v))
		return nil
	}); err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	what := fmt.Sprintf("file sink %s[%d]: dir %q: commit of checkpoint %d", s.Name, s.Subtask, s.Config.Dir, bound)
	err := twophase.Retry(ctx, what, func(context.Context) error {
		for _, n := range names {
			if err := s.rename(n); err != nil {
				return err
			}
		}
		return s.syncDir()
	}, s.OnError)
	if err != nil {
		return err
	}
	return s.Pending.Delete(bound)
}

// rename moves a temporary file into place, idempotently.
func (s *Sink) rename(temp string) error {
	epoch, ok := epochOf(temp)
	if !ok {
		return twophase.Permanent(fmt.Errorf("pending file %q is not one of this sink's", temp))
	}
	final := s.finalName(epoch)
	err := s.FS.Rename(s.path(temp), s.path(final))
	if err == nil {
		s.Committed++
		return nil
	}
	if _, serr := s.FS.Stat(s.path(temp)); errors.Is(serr, os.ErrNotExist) {
		if _, ferr := s.FS.Stat(s.path(final)); ferr == nil {
			return nil // renamed before a crash
		}
		return twophase.Permanent(fmt.Errorf("%s is gone and %s is not there: the checkpoint's output is lost", temp, final))
	}
	return fmt.Errorf("rename %s: %w", temp, err)
}

// epochOf reads the epoch back from a temporary file's name.
func epochOf(temp string) (executor.BarrierID, bool) {
	i := strings.LastIndex(temp, "-e")
	if i < 0 || !strings.HasSuffix(temp, ".tmp") {
		return 0, false
	}
	var e uint64
	if _, err := fmt.Sscanf(temp[i+2:len(temp)-4], "%d", &e); err != nil {
		return 0, false
	}
	return executor.BarrierID(e), true
}

// syncDir makes the renames durable.
func (s *Sink) syncDir() error {
	d, err := s.FS.OpenDir(s.Config.Dir)
	if err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}
