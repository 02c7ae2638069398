package runner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/executor"
)

// Savepoints are checkpoints taken on request (`weir savepoint JOB`),
// always aligned, and copied into a folder of their own that no retention
// removes. A job starts from one with --weir_savepoint=PATH, through a
// transform-name mapping for renamed transforms, and refuses one that does
// not fit its pipeline unless dropping state is allowed.
const (
	SavepointOption             = "weir_savepoint"
	SavepointRenameOption       = "weir_savepoint_rename"
	SavepointAllowDroppedOption = "weir_savepoint_allow_dropped_state"
)

var (
	_ = flag.String(SavepointOption, "", "weir: start from the savepoint in this folder (needs --weir_checkpoint_interval)")
	_ = flag.String(SavepointRenameOption, "", "weir: transforms renamed since the savepoint, as old=new,old2=new2")
	_ = flag.String(SavepointAllowDroppedOption, "", "weir: drop savepoint state no transform of the job takes, instead of refusing the savepoint")
)

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
	path := pipelineOption(j.Options, SavepointOption)
	rename := pipelineOption(j.Options, SavepointRenameOption)
	allow := pipelineOption(j.Options, SavepointAllowDroppedOption)
	if path == "" {
		if rename != "" || allow != "" {
			return nil, fmt.Errorf("options --%s and --%s need --%s", SavepointRenameOption, SavepointAllowDroppedOption, SavepointOption)
		}
		return nil, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("option --%s=%q: %w", SavepointOption, path, err)
	}
	c := &savepointConfig{path: abs}
	if c.rename, err = parseRename(rename); err != nil {
		return nil, fmt.Errorf("option --%s: %w", SavepointRenameOption, err)
	}
	if allow != "" {
		if c.allowDropped, err = strconv.ParseBool(allow); err != nil {
			return nil, fmt.Errorf("option --%s=%q: want true or false", SavepointAllowDroppedOption, allow)
		}
	}
	return c, nil
}

// parseRename reads old=new pairs separated by commas.
func parseRename(s string) (map[string]string, error) {
	m := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	for _, pair := range strings.Split(s, ",") {
		from, to, ok := strings.Cut(pair, "=")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("%q is not old=new", pair)
		}
		if prev, dup := m[from]; dup && prev != to {
			return nil, fmt.Errorf("%q is renamed twice, to %q and %q", from, prev, to)
		}
		m[from] = to
	}
	return m, nil
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
