package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/joboptions"
)

// Restarts.
//
// A job that takes checkpoints and fails while it runs restarts in this
// process from its newest checkpoint, as Flink's fixed-delay restart
// strategy does: after --weir_restart_delay the whole graph is built again
// (a new Fn API server and workers, a fresh store loaded from the
// checkpoint), sources read again from the checkpoint's positions and
// exactly-once sinks abort what they had not committed, so the output is
// as if the failure had not been. Only failures of a running graph
// restart: one before it runs (a plan, a restore that fails) would fail
// the same way again, and a cancelled or drained job is not failing.
//
// --weir_restart_attempts bounds the restarts in a row that complete no
// checkpoint between them: a job that fails, restarts and checkpoints
// again has shown it can run, and a long-running stream should not die of
// its fourth worker crash in a month, while one that fails the same way
// each time (a bug, a record it cannot read) fails after that many. Where
// no checkpoint completed since the job started, it restarts where it
// started (from scratch, its savepoint, or the checkpoint it restored).
//
// Without checkpoints a job never restarts: from scratch it would repeat
// the output it already gave. That is why bundles stream their output
// only in jobs that take checkpoints unless a job asks (bundles.go): a
// bundle lost after its output left cannot be retried alone.

// restarts is a job's restart strategy while it runs.
type restarts struct {
	attempts int
	delay    time.Duration
	// dir is the job's checkpoint root; "" when it takes no checkpoints.
	dir string
	// newest is the newest checkpoint in the root when the job last
	// started or failed; restore says a checkpoint completed since the
	// job started, so a restart resumes from the newest.
	newest  checkpoint.ID
	restore bool
	// used counts restarts since a checkpoint last completed, and total
	// all of them.
	used, total int
	// ran says the current attempt got as far as running its graph.
	ran bool
}

// newRestarts reads the job's restart options.
func newRestarts(j *Job, stateDir string) (*restarts, error) {
	opts, err := j.JobOptions()
	if err != nil {
		return nil, err
	}
	r := &restarts{attempts: opts.RestartAttempts, delay: opts.RestartDelay}
	cfg, err := checkpointOptions(j, stateDir)
	if err != nil || cfg == nil {
		return r, err
	}
	r.dir = cfg.dir
	if r.newest, err = r.latest(); err != nil {
		return nil, err
	}
	return r, nil
}

// latest returns the newest checkpoint in the job's root, 0 if none. It
// only reads: the job does not hold the root here (before it starts, or
// after an attempt released it), and another job holding it may have a
// checkpoint in flight.
func (r *restarts) latest() (checkpoint.ID, error) {
	ids, err := checkpoint.ListComplete(nil, r.dir)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[0], nil
}

// adjust makes the checkpoint options of a restart resume from the
// newest checkpoint once the job has completed one.
func (r *restarts) adjust(cfg *checkpointConfig) {
	if cfg != nil && r != nil && r.restore {
		cfg.restore = true
	}
}

// failed decides what to do with the failure err of an attempt: it
// returns the error that fails the job, or nil to restart it.
func (r *restarts) failed(err error) error {
	if !r.ran {
		return err
	}
	if r.dir == "" {
		if errors.Is(err, executor.ErrOutputLeft) {
			return fmt.Errorf("%w\n(the job takes no checkpoints to restart from: set --%s, or --%s=%s so that lost bundles are retried)",
				err, joboptions.CheckpointInterval, joboptions.StreamBundleOutput, joboptions.StreamOff)
		}
		return err
	}
	newest, lerr := r.latest()
	if lerr != nil {
		return fmt.Errorf("%w\n(no restart: the checkpoint folder cannot be read: %v)", err, lerr)
	}
	if newest > r.newest {
		r.newest, r.restore, r.used = newest, true, 0
	}
	if r.used >= r.attempts {
		if r.attempts == 0 {
			return err
		}
		return fmt.Errorf("%w\n(restarted %d times without a checkpoint completing in between, the most --%s=%d allows)",
			err, r.used, joboptions.RestartAttempts, r.attempts)
	}
	r.used++
	r.total++
	return nil
}

// from says where a restart resumes.
func (r *restarts) from() string {
	if r.restore {
		return fmt.Sprintf("from checkpoint %d", r.newest)
	}
	return "where it started (no checkpoint has completed since)"
}

// wait waits the restart delay, or until ctx ends.
func (r *restarts) wait(ctx context.Context) error {
	if r.delay <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(r.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Execute implements Executor: it runs the job, and restarts it from its
// newest checkpoint after a failure as long as its restart options allow.
func (e *LocalExecutor) Execute(ctx context.Context, j *Job) error {
	stateDir := e.StateDir
	if stateDir == "" {
		stateDir = defaultStateDir()
	}
	r, err := newRestarts(j, stateDir)
	if err != nil {
		return err
	}
	for {
		r.ran = false
		err := e.execute(ctx, j, r)
		if err == nil || ctx.Err() != nil {
			return err
		}
		if err := r.failed(err); err != nil {
			return err
		}
		j.restarts.Add(1)
		j.Warn("weir: job restarting", fmt.Sprintf("the job failed: %v; restarting it %s in %v (restart %d of at most %d in a row)",
			err, r.from(), r.delay, r.used, r.attempts), "restart", r.total)
		if err := r.wait(ctx); err != nil {
			return err
		}
	}
}
