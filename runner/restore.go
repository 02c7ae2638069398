package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/translate"
)

// A job with checkpoints resumes from the newest valid checkpoint in its
// root unless it sets --weir_restore=false (RestoreOption), which starts it
// over (its checkpoints then continue the root's numbering, so the old ones
// age out).

// graphShape is what a manifest records of the job's graph.
func graphShape(plan *translate.Plan, g *executor.Graph) []checkpoint.GraphNode {
	shape := make([]checkpoint.GraphNode, len(g.Nodes))
	for i, n := range g.Nodes {
		s := plan.Stages[i]
		shape[i] = checkpoint.GraphNode{Stage: string(s.ID), Name: s.Name, Parallelism: n.Parallelism}
		if s.Stateful != nil {
			shape[i].Transform = s.Stateful.TransformID
		}
	}
	return shape
}

// restorePoint is the checkpoint a job resumes from, read and checked.
type restorePoint struct {
	id       checkpoint.ID
	subtasks map[checkpoint.Task]*executor.SubtaskRestore
	// fresh are the nodes a savepoint has nothing of: they start empty.
	fresh map[int]bool
}

// subtask implements executor.Graph.Restore. A subtask the checkpoint has
// no part of had ended before it was taken.
func (r *restorePoint) subtask(node, sub int) *executor.SubtaskRestore {
	if r.fresh[node] {
		return nil
	}
	if rs, ok := r.subtasks[checkpoint.Task{Node: node, Subtask: sub}]; ok {
		return rs
	}
	return &executor.SubtaskRestore{Finished: true}
}

// restoreJob finds the checkpoint the job resumes from and loads its
// store records into store, which must be fresh. It returns nil when there
// is nothing to resume (restore off, or an empty root). Corrupt
// checkpoints newer than the one used are reported as job warnings; a root
// whose checkpoints all fail to verify fails the job rather than silently
// starting over and repeating its output.
func restoreJob(ctx context.Context, j *Job, cfg *checkpointConfig, store *state.Store) (*restorePoint, error) {
	if cfg.restore {
		rp, err := restoreOwn(ctx, j, cfg, store)
		if rp != nil || err != nil || cfg.savepoint == nil {
			return rp, err
		}
	}
	if cfg.savepoint != nil {
		return restoreSavepoint(ctx, j, cfg, store)
	}
	return nil, nil
}

// restoreOwn restores from the newest checkpoint in the job's own root. A
// job started from a savepoint takes only checkpoints of a run that
// started from the same savepoint (a crash after the start); older ones
// are of the pipeline before the savepoint.
func restoreOwn(ctx context.Context, j *Job, cfg *checkpointConfig, store *state.Store) (*restorePoint, error) {
	storage, err := checkpoint.OpenStorage(checkpoint.StorageOptions{FS: cfg.fs, Dir: cfg.dir, Job: j.Name})
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	last, finished, err := storage.FinishedAt()
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	c, corrupt, err := storage.Latest()
	for _, ce := range corrupt {
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "restore: skipped corrupt %v", ce)
	}
	if finished && (errors.Is(err, checkpoint.ErrNoCheckpoint) || err == nil && c.Manifest.Checkpoint <= last) {
		// Its last run ended by itself: this one is a new run.
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_BASIC, "the previous run of job %s finished; starting over (its checkpoints in %s are not restored)",
			j.Name, cfg.dir)
		return nil, nil
	}
	switch {
	case errors.Is(err, checkpoint.ErrNoCheckpoint) && len(corrupt) == 0:
		return nil, nil
	case errors.Is(err, checkpoint.ErrNoCheckpoint):
		return nil, fmt.Errorf("restore: none of the %d checkpoints in %s verifies; set --%s=false to start over",
			len(corrupt), cfg.dir, RestoreOption)
	case err != nil:
		return nil, fmt.Errorf("restore from %s: %w", cfg.dir, err)
	}
	if cfg.savepoint != nil && c.Manifest.Origin != cfg.savepoint.path {
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_BASIC, "checkpoint %d in %s is not of a run started from savepoint %s: starting from the savepoint",
			c.Manifest.Checkpoint, cfg.dir, cfg.savepoint.path)
		return nil, nil
	}
	if err := checkpoint.CheckGraph(&c.Manifest, cfg.graph); err != nil {
		return nil, fmt.Errorf("restore from %s: %w", c.Dir, err)
	}
	rp, byTask, err := readRestorePoint(storage.FS(), c)
	if err != nil {
		return nil, fmt.Errorf("restore from %s: %w", c.Dir, err)
	}
	files := make([]string, 0, len(byTask))
	for _, f := range byTask {
		files = append(files, f)
	}
	if err := store.Import(ctx, storage.FS(), files); err != nil {
		return nil, fmt.Errorf("restore from %s: %w", c.Dir, err)
	}
	j.Logf(jobpb.JobMessage_JOB_MESSAGE_BASIC, "restored from checkpoint %d (%s): %d subtasks, %d state files",
		c.Manifest.Checkpoint, c.Dir, len(rp.subtasks), len(files))
	return rp, nil
}

// readRestorePoint reads every subtask's metadata and in-flight data, and
// returns the path of each subtask's state file to import.
func readRestorePoint(fs vfs.FS, c *checkpoint.Checkpoint) (*restorePoint, map[checkpoint.Task]string, error) {
	rp := &restorePoint{id: c.Manifest.Checkpoint, subtasks: map[checkpoint.Task]*executor.SubtaskRestore{}}
	files := map[checkpoint.Task]string{}
	for _, sm := range c.Manifest.Subtasks {
		task := checkpoint.Task{Node: sm.Node, Subtask: sm.Subtask}
		if sm.Node < 0 || sm.Node >= len(c.Manifest.Graph) || sm.Subtask < 0 || sm.Subtask >= c.Manifest.Graph[sm.Node].Parallelism {
			return nil, nil, fmt.Errorf("subtask %d/%d is not in the checkpoint's graph", sm.Node, sm.Subtask)
		}
		var meta subtaskMeta
		if err := json.Unmarshal(sm.Meta, &meta); err != nil {
			return nil, nil, fmt.Errorf("subtask %d/%d: metadata: %w", sm.Node, sm.Subtask, err)
		}
		rs := &executor.SubtaskRestore{State: meta.State}
		for _, wm := range meta.Watermarks {
			rs.Watermarks = append(rs.Watermarks, mtime.Time(wm))
		}
		for _, m := range meta.Channels {
			rs.Channels = append(rs.Channels, m.mark())
		}
		if meta.StateFile != "" {
			files[task] = c.Path(fs, meta.StateFile)
		}
		if meta.InFlightFile != "" {
			b, err := readFile(fs, c.Path(fs, meta.InFlightFile))
			if err != nil {
				return nil, nil, fmt.Errorf("subtask %d/%d: in-flight data: %w", sm.Node, sm.Subtask, err)
			}
			rs.InFlight = b
		}
		rp.subtasks[task] = rs
	}
	return rp, files, nil
}

func readFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
