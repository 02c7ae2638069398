// Package filesink is the runner side of fileio.Write: an exactly-once
// file sink, a twophase.Sink that a twophase.Driver runs (package twophase
// has the protocol).
//
// Each sink subtask writes the records of an epoch to a hidden temporary
// file in the target folder, one record a line. At Barrier(N) the file is
// flushed, synced and closed, and its name is the epoch's committable (the
// pre-commit: the checkpoint's snapshot holds the name). When checkpoint C
// completes, every file of an epoch below C is renamed into place. A
// rename is the commit and its own marker: renaming a file that was
// renamed already (its temporary name gone, its final name there) is a
// no-op, so a restored sink renames the names its snapshot holds again
// without harm. File names hold the job's lineage and the run (a new token
// at every start, twophase.Session), so a restored run never overwrites
// what an earlier one published. Temporary files of the lineage that the
// restored checkpoint does not name were written after it, and are
// removed (Abort): the sources replay their records.
package filesink

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/wire"
)

// Sink is the twophase.Sink of one file sink subtask.
type Sink struct {
	Config  *fileio.WriteConfig
	Name    string // names the sink in errors
	Subtask int
	// In decodes the input's windowed values (bytes or string elements).
	In *wire.Codec
	// FS is the file system; default the operating system's.
	FS vfs.FS

	lineage, run string
	epoch        executor.BarrierID // the epoch of file
	file         vfs.File           // the open epoch's temporary file; nil before its first record
	w            *bufio.Writer
	// Committed counts the files renamed into place, for tests.
	Committed int
}

var _ twophase.Sink = (*Sink)(nil)

// tempName names the temporary file of an epoch; finalOf, the name it is
// committed under. The run token keeps a run whose epochs start again
// (restored, or started afresh) from overwriting an earlier run's files.
func (s *Sink) tempName(epoch executor.BarrierID) string {
	return fmt.Sprintf(".%s-%s-%s-s%d-e%d.tmp", s.Config.FilePrefix(), s.lineage, s.run, s.Subtask, epoch)
}

func (s *Sink) finalOf(temp string) (string, bool) {
	base, ok := strings.CutSuffix(temp, ".tmp")
	if !ok || !strings.HasPrefix(base, "."+s.Config.FilePrefix()+"-") {
		return "", false
	}
	return base[1:] + s.Config.Suffix, true
}

// mine reports whether a file is a temporary file of this sink subtask's
// lineage.
func (s *Sink) mine(name string) bool {
	return strings.HasPrefix(name, fmt.Sprintf(".%s-%s-", s.Config.FilePrefix(), s.lineage)) &&
		strings.Contains(name, fmt.Sprintf("-s%d-e", s.Subtask)) && strings.HasSuffix(name, ".tmp")
}

func (s *Sink) path(name string) string { return s.FS.PathJoin(s.Config.Dir, name) }

func (s *Sink) errorf(format string, args ...any) error {
	return fmt.Errorf("file sink %s[%d]: dir %q: %s", s.Name, s.Subtask, s.Config.Dir, fmt.Sprintf(format, args...))
}

// Open implements twophase.Sink: it makes the folder.
func (s *Sink) Open(_ context.Context, ss twophase.Session) error {
	if s.FS == nil {
		s.FS = vfs.Default
	}
	s.lineage, s.run = ss.Lineage, ss.Run
	if err := s.FS.MkdirAll(s.Config.Dir, 0o755); err != nil {
		return s.errorf("%v", err)
	}
	return nil
}

// Abort implements twophase.Sink: it removes the subtask's temporary
// files of its lineage that restored does not name.
func (s *Sink) Abort(_ context.Context, restored []twophase.Committable) error {
	keep := map[string]bool{}
	for _, c := range restored {
		keep[string(c.Data)] = true
	}
	names, err := s.FS.List(s.Config.Dir)
	if err != nil {
		return s.errorf("%v", err)
	}
	for _, n := range names {
		if keep[n] || !s.mine(n) {
			continue
		}
		if err := s.FS.Remove(s.path(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return s.errorf("remove %s, not in the checkpoint: %v", n, err)
		}
	}
	return nil
}

// Write implements twophase.Sink: each element's bytes and a newline go
// to the epoch's temporary file.
func (s *Sink) Write(_ context.Context, epoch twophase.Epoch, elems [][]byte) error {
	if s.file == nil {
		f, err := s.FS.Create(s.path(s.tempName(epoch)), vfs.WriteCategoryUnspecified)
		if err != nil {
			return s.errorf("%v", err)
		}
		s.epoch, s.file, s.w = epoch, f, bufio.NewWriterSize(f, 64<<10)
	}
	if epoch != s.epoch {
		return s.errorf("write to epoch %d while epoch %d is open", epoch, s.epoch)
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
			return s.errorf("write %s: %v", s.tempName(epoch), err)
		}
	}
	return nil
}

// Prepare implements twophase.Sink: it flushes, syncs and closes the
// epoch's file; its name is the committable.
func (s *Sink) Prepare(context.Context, twophase.Epoch) ([]byte, error) {
	if s.file == nil {
		return nil, nil
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
		return nil, s.errorf("pre-commit %s: %v", name, err)
	}
	return []byte(name), nil
}

// Commit implements twophase.Sink: it renames the files into place,
// idempotently, and syncs the folder.
func (s *Sink) Commit(_ context.Context, cs []twophase.Committable) error {
	for _, c := range cs {
		if err := s.rename(string(c.Data)); err != nil {
			return err
		}
	}
	return s.syncDir()
}

// Close implements twophase.Sink.
func (s *Sink) Close() error { return nil }

// rename moves a temporary file into place, idempotently.
func (s *Sink) rename(temp string) error {
	final, ok := s.finalOf(temp)
	if !ok {
		return twophase.Permanent(fmt.Errorf("pending file %q is not one of this sink's", temp))
	}
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
