package runner

import (
	"fmt"
	"path/filepath"
	"sync"
)

// roots are the checkpoint roots of the jobs running in this process. The
// default root is keyed by job name, so submitting a job again while the
// first run still runs would put two jobs in one root: the second's
// restore would remove the first's checkpoint in flight, and both would
// write the same checkpoint numbers. Across processes nothing is locked
// yet.
var roots = struct {
	sync.Mutex
	m map[string]JobID
}{m: map[string]JobID{}}

// claimRoot reserves a checkpoint root for job id until release is called.
func claimRoot(dir string, id JobID) (release func(), err error) {
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
	roots.m[abs] = id
	return func() {
		roots.Lock()
		defer roots.Unlock()
		if roots.m[abs] == id {
			delete(roots.m, abs)
		}
	}, nil
}
