package runner

import (
	"context"
	"fmt"
	"strings"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/state"
)

// restoreSavepoint starts the job from the savepoint its options name. The
// savepoint's nodes are matched to the job's by transform name, through
// the rename mapping (checkpoint.MatchGraph), so the job may differ from
// the pipeline that took it: renamed, added and removed transforms. Each
// matched node's state moves to its stage's namespace in this job.
func restoreSavepoint(ctx context.Context, j *Job, cfg *checkpointConfig, store *state.Store) (*restorePoint, error) {
	sp := cfg.savepoint
	fs := vfs.Default
	c, err := checkpoint.OpenSavepoint(fs, sp.path)
	if err != nil {
		return nil, fmt.Errorf("restore from savepoint: %w", err)
	}
	saved, files, err := readRestorePoint(fs, c)
	if err != nil {
		return nil, fmt.Errorf("restore from savepoint %s: %w", sp.path, err)
	}
	match, err := checkpoint.MatchGraph(&c.Manifest, cfg.graph, checkpoint.MatchOptions{
		Rename:       sp.rename,
		HasState:     func(i int) bool { return nodeHasState(saved, files, i) },
		AllowDropped: sp.allowDropped,
	})
	if err != nil {
		return nil, fmt.Errorf("restore from savepoint %s: %w", sp.path, err)
	}
	rp := &restorePoint{id: c.Manifest.Checkpoint, subtasks: map[checkpoint.Task]*executor.SubtaskRestore{}, fresh: map[int]bool{}}
	for _, n := range match.Fresh {
		rp.fresh[n] = true
	}
	var paths []string
	var moves []nsMove
	for task, rs := range saved.subtasks {
		into := match.Into[task.Node]
		if into < 0 {
			continue
		}
		// Channels are numbered by the producers feeding each input, which
		// a changed graph may have added or moved: the ports' watermarks
		// say the same for an aligned snapshot, which a savepoint is.
		rs.Channels = nil
		rp.subtasks[checkpoint.Task{Node: into, Subtask: task.Subtask}] = rs
		if f, ok := files[task]; ok {
			paths = append(paths, f)
			moves = append(moves, nsMove{
				from: stageNamespaceOf(c.Manifest.Graph[task.Node].Stage, task.Subtask),
				to:   stageNamespaceOf(cfg.graph[into].Stage, task.Subtask)})
		}
	}
	if err := store.Import(ctx, fs, paths); err != nil {
		return nil, fmt.Errorf("restore from savepoint %s: %w", sp.path, err)
	}
	if err := moveNamespaces(store, moves); err != nil {
		return nil, fmt.Errorf("restore from savepoint %s: %w", sp.path, err)
	}
	j.Logf(jobpb.JobMessage_JOB_MESSAGE_BASIC, "started from savepoint %s (checkpoint %d of job %s): %d subtasks, %d state files",
		sp.path, c.Manifest.Checkpoint, c.Manifest.Job, len(rp.subtasks), len(paths))
	for from, to := range sp.rename {
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_BASIC, "savepoint: the state of %q goes to %q", from, to)
	}
	if len(match.Dropped) > 0 {
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "savepoint: dropped the state of %s, which no transform of the job takes (--%s)",
			strings.Join(match.Dropped, ", "), SavepointAllowDroppedOption)
	}
	for _, n := range match.Fresh {
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_DETAILED, "savepoint: %s is new, it starts empty", cfg.graph[n].Name)
	}
	return rp, nil
}

// nodeHasState reports whether savepoint node i recorded anything: store
// records, operator or source state, or in-flight data.
func nodeHasState(rp *restorePoint, files map[checkpoint.Task]string, i int) bool {
	for task, rs := range rp.subtasks {
		if task.Node != i {
			continue
		}
		if _, ok := files[task]; ok || len(rs.State) > 0 || len(rs.InFlight) > 0 {
			return true
		}
	}
	return false
}

// stageNamespaceOf is stageNamespace by stage id.
func stageNamespaceOf(stage string, sub int) string { return fmt.Sprintf("%s/%d", stage, sub) }

// nsMove is one namespace to rename in the store.
type nsMove struct{ from, to string }

// moveNamespaces renames namespaces in the store. The moves may form
// cycles (two stages that swapped ids), so everything moves to a
// temporary name first and then to its place.
func moveNamespaces(store *state.Store, moves []nsMove) error {
	var pending []nsMove
	for _, m := range moves {
		if m.from == m.to {
			continue
		}
		tmp := "savepoint-restore/" + m.to
		if err := store.MoveNamespace(m.from, tmp); err != nil {
			return err
		}
		pending = append(pending, nsMove{from: tmp, to: m.to})
	}
	for _, m := range pending {
		if err := store.MoveNamespace(m.from, m.to); err != nil {
			return err
		}
	}
	return nil
}
