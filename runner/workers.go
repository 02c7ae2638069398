package runner

import (
	"context"
	"fmt"
	"sync"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/fnapi"
)

// workerSet starts one SDK worker per environment on first use, and a new
// one when a worker is lost. It stops them all at the end of the job.
type workerSet struct {
	fn   *fnapi.Server
	envs map[string]*pipepb.Environment
	j    *Job // hears of lost workers

	mu      sync.Mutex
	current map[string]*fnapi.Worker
	stops   map[*fnapi.Worker]func()
	lost    int // workers replaced after they were lost
}

func newWorkerSet(fn *fnapi.Server, envs map[string]*pipepb.Environment, j *Job) *workerSet {
	ws := &workerSet{fn: fn, envs: envs, j: j, current: map[string]*fnapi.Worker{}, stops: map[*fnapi.Worker]func(){}}
	if testHookWorkers != nil {
		testHookWorkers(j, ws)
	}
	return ws
}

// testHookWorkers, if set, is handed each job's workers as the job starts
// (tests that kill a worker mid-bundle).
var testHookWorkers func(*Job, *workerSet)

// Worker implements executor.Workers.
func (ws *workerSet) Worker(ctx context.Context, env string) (*fnapi.Worker, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w, ok := ws.current[env]; ok {
		return w, nil
	}
	return ws.startLocked(ctx, env)
}

// Replace implements executor.Workers.
func (ws *workerSet) Replace(ctx context.Context, env string, lost *fnapi.Worker) (*fnapi.Worker, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w, ok := ws.current[env]; ok && w != lost {
		return w, nil // another subtask replaced it already
	}
	// Once per worker, here where it is replaced: each subtask that lost
	// a bundle with it warns of its own retry (executor.SDKStage).
	id := "?"
	if lost != nil {
		id = lost.ID
	}
	ws.j.Warn("weir: SDK worker lost", fmt.Sprintf("SDK worker %s of environment %s was lost; starting a new one", id, env),
		"env", env, "worker", id)
	ws.lost++
	return ws.startLocked(ctx, env)
}

func (ws *workerSet) startLocked(ctx context.Context, env string) (*fnapi.Worker, error) {
	e, ok := ws.envs[env]
	if !ok {
		return nil, fmt.Errorf("environment %q is not defined", env)
	}
	w, stop, err := ws.fn.StartWorker(ctx, env, e)
	if err != nil {
		return nil, err
	}
	ws.current[env] = w
	ws.stops[w] = stop
	return w, nil
}

func (ws *workerSet) stopAll() {
	ws.mu.Lock()
	stops := ws.stops
	ws.stops = map[*fnapi.Worker]func(){}
	ws.mu.Unlock()
	for _, s := range stops {
		s()
	}
}

// counts returns how many workers the set runs now and how many it
// replaced after they were lost.
func (ws *workerSet) counts() (running, lost int) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.current), ws.lost
}
