package checkpoint

import (
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A savepoint is a checkpoint taken on request and copied out of the
// job's checkpoint root into a folder of its own, which no retention
// removes: the user owns it, restores a new job from it (perhaps of a
// changed pipeline, see MatchGraph), and deletes it. Checkpoints here are
// not incremental (every chk-N holds all its files), so the copy is
// self-contained.

// MarkSavepoint records in the manifest that the checkpoint is a savepoint.
func (w *Writer) MarkSavepoint() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m.Savepoint = true
}

// CopyOut copies completed checkpoint id into dst, which must not exist:
// into dst.tmp first, every file synced, then renamed, so dst is either
// absent or whole. The copy is verified against the manifest before the
// rename.
func (s *Storage) CopyOut(id ID, dst string) error {
	fs := s.fs
	if _, err := fs.Stat(dst); err == nil {
		return fmt.Errorf("checkpoint %d: savepoint folder %s already exists", id, dst)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checkpoint %d: savepoint folder %s: %w", id, dst, err)
	}
	src := fs.PathJoin(s.dir, dirName(id))
	m, err := readManifest(fs, src)
	if err != nil {
		return fmt.Errorf("checkpoint %d: read manifest: %w", id, err)
	}
	tmp := dst + ".tmp"
	if err := fs.RemoveAll(tmp); err != nil {
		return fmt.Errorf("checkpoint %d: clear %s: %w", id, tmp, err)
	}
	if err := fs.MkdirAll(tmp, 0o755); err != nil {
		return fmt.Errorf("checkpoint %d: create %s: %w", id, tmp, err)
	}
	fail := func(err error) error {
		fs.RemoveAll(tmp)
		return fmt.Errorf("checkpoint %d: copy to %s: %w", id, dst, err)
	}
	names := []string{ManifestName}
	for _, f := range m.Files {
		names = append(names, f.Name)
	}
	for _, n := range names {
		data, err := readAll(fs, fs.PathJoin(src, n))
		if err == nil {
			err = writeSynced(fs, fs.PathJoin(tmp, n), data)
		}
		if err != nil {
			return fail(err)
		}
	}
	if err := syncDir(fs, tmp); err != nil {
		return fail(err)
	}
	if _, err := verifyDir(fs, tmp, id, true); err != nil {
		return fail(err)
	}
	if err := fs.Rename(tmp, dst); err != nil {
		return fail(err)
	}
	if err := syncDir(fs, fs.PathDir(dst)); err != nil {
		return fmt.Errorf("checkpoint %d: savepoint %s: %w", id, dst, err)
	}
	return nil
}

// OpenSavepoint reads and verifies the savepoint (or any checkpoint
// folder) in dir. What is wrong with it is a *CorruptError.
func OpenSavepoint(fs vfs.FS, dir string) (*Checkpoint, error) {
	if _, err := fs.Stat(dir); err != nil {
		return nil, fmt.Errorf("checkpoint: savepoint %s: %w", dir, err)
	}
	return verifyDir(fs, dir, 0, false)
}
