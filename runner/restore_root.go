package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/checkpoint"
)

// roots are the checkpoint roots of the jobs running in this process. The
// default root is keyed by job name, so submitting a job again while the
// first run still runs would put two jobs in one root: the second's
// restore would remove the first's checkpoint in flight, and both would
// write the same checkpoint numbers. Within this process the map tells
// which job holds a root; across processes the root's lock file
// (checkpoint.LockRoot) does.
var roots = struct {
	sync.Mutex
	m map[string]JobID
}{m: map[string]JobID{}}

// claimRoot reserves a checkpoint root for job id (named name) until
// release is called: in this process, then against other processes by
// the root's lock file, which the kernel releases if the process dies.
func claimRoot(fs vfs.FS, dir, name string, id JobID) (release func() error, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint folder %s: %w", dir, err)
	}
	roots.Lock()
	defer roots.Unlock()
	if other, ok := roots.m[abs]; ok {
		return nil, fmt.Errorf("checkpoint folder %s is in use by job %s, still running: wait for it to end, or give this job another name or --%s",
			abs, other, CheckpointDirOption)
	}
	host, _ := os.Hostname()
	lock, err := checkpoint.LockRoot(fs, abs, checkpoint.Holder{PID: os.Getpid(), Host: host, Job: name, JobID: string(id)})
	if err != nil {
		return nil, fmt.Errorf("%w (wait for it to end, or give this job another name or --%s)", err, CheckpointDirOption)
	}
	roots.m[abs] = id
	return func() error {
		roots.Lock()
		defer roots.Unlock()
		if roots.m[abs] != id {
			return nil
		}
		delete(roots.m, abs)
		return lock.Release()
	}, nil
}
