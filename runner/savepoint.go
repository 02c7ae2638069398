package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/executor"
)

// Savepoints are checkpoints taken on request (`weir savepoint JOB`),
// always aligned, and copied into a folder of their own that no retention
// removes. A job starts from one with --weir_savepoint=PATH, through a
// transform-name mapping for renamed transforms, and refuses one that does
// not fit its pipeline unless dropping state is allowed (SavepointOption,
// SavepointRenameOption, SavepointAllowDroppedOption).

// savepointConfig is what a job's options ask of the savepoint it starts
// from.
type savepointConfig struct {
	path         string // absolute
	rename       map[string]string
	allowDropped bool
}

// savepointOptions reads the savepoint options; nil when the job starts
// from none.
func savepointOptions(j *Job) (*savepointConfig, error) {
	opts, err := j.JobOptions()
	if err != nil || opts.Savepoint == "" {
		return nil, err
	}
	abs, err := filepath.Abs(opts.Savepoint)
	if err != nil {
		return nil, fmt.Errorf("option --%s=%q: %w", SavepointOption, opts.Savepoint, err)
	}
	return &savepointConfig{path: abs, rename: opts.SavepointRename, allowDropped: opts.SavepointAllowDroppedState}, nil
}

// SavepointResult says where a savepoint was written.
type SavepointResult struct {
	Path       string
	Checkpoint checkpoint.ID
}

// errNoSavepoints refuses a savepoint of a job that is not taking
// checkpoints.
var errNoSavepoints = errors.New("no savepoint can be taken")

// errSavepointBusy refuses a second savepoint while one is being taken.
var errSavepointBusy = errors.New("a savepoint of the job is being taken already")

// takeSavepoint requests a savepoint into dir and waits for it. With stop it also
// waits for every two-phase-commit sink to commit it, so the output it
// covers is visible when the caller stops the job.
func (c *jobCheckpoints) takeSavepoint(ctx context.Context, dir string, stop bool) (SavepointResult, error) {
	c.mu.Lock()
	if c.spDir != "" {
		c.mu.Unlock()
		return SavepointResult{}, errSavepointBusy
	}
	if dir == "" {
		dir = filepath.Join(filepath.Dir(c.storage.Dir()), "savepoints")
	}
	c.spDir, c.spPath = dir, ""
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.spDir = ""
		c.mu.Unlock()
	}()
	var st checkpoint.Stats
	select {
	case st = <-c.driver.RequestSavepoint():
	case <-ctx.Done():
		return SavepointResult{}, context.Cause(ctx)
	}
	if st.Status != checkpoint.Completed {
		return SavepointResult{}, fmt.Errorf("savepoint (checkpoint %d) failed: %s", st.ID, st.Reason)
	}
	c.mu.Lock()
	res := SavepointResult{Path: c.spPath, Checkpoint: st.ID}
	c.mu.Unlock()
	if stop {
		if err := c.graph.WaitCommitted(ctx, executor.BarrierID(st.ID)); err != nil {
			return res, fmt.Errorf("savepoint %s taken, but its sinks did not commit: %w", res.Path, err)
		}
	}
	return res, nil
}

// savepointFolder names the folder a savepoint of checkpoint id goes to.
func (c *jobCheckpoints) savepointFolder(dir string, id checkpoint.ID) string {
	return filepath.Join(dir, fmt.Sprintf("savepoint-%s-%d", safeName(jobFolder(c.j)), id))
}

// copySavepoint copies completed checkpoint id, a savepoint, out of the
// root. Called by commit, on the driver's goroutine, before the
// coordinator hears the checkpoint is complete: the savepoint's requester
// learns of it with its folder in place.
func (c *jobCheckpoints) copySavepoint(id checkpoint.ID) error {
	c.mu.Lock()
	dir := c.spDir
	c.mu.Unlock()
	if dir == "" {
		return errors.New("savepoint: no folder requested")
	}
	path := c.savepointFolder(dir, id)
	if err := c.storage.FS().MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("savepoint: create %s: %w", dir, err)
	}
	if err := c.storage.CopyOut(id, path); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	c.mu.Lock()
	c.spPath = path
	c.mu.Unlock()
	c.j.Logf(jobpb.JobMessage_JOB_MESSAGE_BASIC, "savepoint %s written (checkpoint %d)", path, id)
	return nil
}

// TakeSavepoint takes a savepoint of the running job into dir (default:
// savepoints beside the job's checkpoint folder) and returns where it is.
// With stop it also waits for the job's sinks to commit it; the caller
// then cancels the job.
func (j *Job) TakeSavepoint(ctx context.Context, dir string, stop bool) (SavepointResult, error) {
	j.spMu.Lock()
	sp := j.sp
	j.spMu.Unlock()
	if sp == nil {
		if st, _ := j.State(); IsTerminal(st) {
			return SavepointResult{}, fmt.Errorf("%w: job %s has ended (%v)", errNoSavepoints, j.ID, st)
		}
		return SavepointResult{}, fmt.Errorf("%w: job %s takes no checkpoints (set --%s), or has not started them yet",
			errNoSavepoints, j.ID, CheckpointIntervalOption)
	}
	return sp.takeSavepoint(ctx, dir, stop)
}

// setSavepointer installs (or, with nil, removes) the checkpoints that
// take the job's savepoints.
func (j *Job) setSavepointer(sp *jobCheckpoints) {
	j.spMu.Lock()
	j.sp = sp
	j.spMu.Unlock()
}
