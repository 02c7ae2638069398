package checkpoint

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A checkpoint root belongs to one running job. Two jobs writing one root
// (the same job started twice, two servers given one folder) would each
// remove the other's checkpoint in flight when they open it, write the
// same checkpoint numbers, and restore each other's state. LockRoot takes
// the root's lock file, as Pebble locks its own folder, so the second job
// fails at start naming the holder.

// Lock file names in a checkpoint root.
const (
	// LockName is the lock file, locked with vfs.FS.Lock (an fcntl lock on
	// the operating system's FS): the kernel releases it when the holder
	// exits, however it exits, so the lock of a dead process never blocks.
	LockName = "LOCK"
	// HolderName says who holds the lock, for the error of the job that
	// finds it taken. It is a separate file because taking the lock
	// truncates LockName.
	HolderName = "LOCK.holder"
)

// Holder describes the job holding a checkpoint root.
type Holder struct {
	PID   int       `json:"pid"`
	Host  string    `json:"host,omitempty"`
	Job   string    `json:"job,omitempty"`
	JobID string    `json:"job_id,omitempty"`
	Since time.Time `json:"since"`
}

func (h *Holder) String() string {
	s := fmt.Sprintf("pid %d", h.PID)
	if h.Host != "" {
		s += " on " + h.Host
	}
	s += ", since " + h.Since.UTC().Format(time.RFC3339)
	if h.Job != "" || h.JobID != "" {
		s = fmt.Sprintf("job %s (%s)", cmp.Or(h.JobID, h.Job), s)
	}
	return s
}

// LockedError is the error of LockRoot when another holds the root.
type LockedError struct {
	Dir string
	// Holder is who holds it, nil when that cannot be read (the holder
	// has not written it yet, or it is unreadable).
	Holder *Holder
	Err    error // the lock's own error
}

func (e *LockedError) Error() string {
	who := "another job"
	if e.Holder != nil {
		who = e.Holder.String()
	}
	return fmt.Sprintf("checkpoint: folder %s is in use by %s: two jobs must not share a checkpoint folder", e.Dir, who)
}

func (e *LockedError) Unwrap() error { return e.Err }

// RootLock is a checkpoint root's lock, held until Release.
type RootLock struct {
	fs   vfs.FS
	dir  string
	lock io.Closer
}

// LockRoot creates the checkpoint root dir if needed and locks it for h.
// Call it before anything reads or writes the root (OpenStorage removes
// unfinished checkpoints). dir should be absolute and clean: within one
// process the operating system's FS tells a second lock of a path by its
// name.
func LockRoot(fs vfs.FS, dir string, h Holder) (*RootLock, error) {
	if fs == nil {
		fs = vfs.Default
	}
	if err := mkdirAllSynced(fs, dir); err != nil {
		return nil, fmt.Errorf("checkpoint: create %s: %w", dir, err)
	}
	lock, err := fs.Lock(fs.PathJoin(dir, LockName))
	if err != nil {
		le := &LockedError{Dir: dir, Err: err}
		if held, rerr := readHolder(fs, dir); rerr == nil {
			le.Holder = held
		}
		return nil, le
	}
	if h.Since.IsZero() {
		h.Since = time.Now()
	}
	data, err := json.Marshal(h)
	if err == nil {
		err = writeAtomic(fs, fs.PathJoin(dir, HolderName), data)
	}
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("checkpoint: lock %s: %w", dir, err)
	}
	return &RootLock{fs: fs, dir: dir, lock: lock}, nil
}

// Release removes the holder file and releases the lock. It is safe to
// call more than once.
func (l *RootLock) Release() error {
	if l == nil || l.lock == nil {
		return nil
	}
	// Before the lock goes: a holder file removed after would be the next
	// holder's.
	err := l.fs.Remove(l.fs.PathJoin(l.dir, HolderName))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if cerr := l.lock.Close(); err == nil {
		err = cerr
	}
	l.lock = nil
	if err != nil {
		return fmt.Errorf("checkpoint: unlock %s: %w", l.dir, err)
	}
	return nil
}

func readHolder(fs vfs.FS, dir string) (*Holder, error) {
	data, err := readAll(fs, fs.PathJoin(dir, HolderName))
	if err != nil {
		return nil, err
	}
	var h Holder
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// writeAtomic writes path through a temporary file and a rename, so a
// reader sees the old content or the new, never part of it.
func writeAtomic(fs vfs.FS, path string, data []byte) error {
	tmp := path + ".tmp"
	if err := writeSynced(fs, tmp, data); err != nil {
		return err
	}
	if err := fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}
