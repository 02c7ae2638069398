package contain

import (
	"context"
	"sync/atomic"
)

// Place names a boundary, for the test hook.
type Place string

// The boundaries, each with a call to At inside it.
const (
	Subtask          Place = "executor subtask (operator, source, sink)"
	SDFHelper        Place = "SDF run helper goroutine"
	FnControl        Place = "Fn API control handler"
	FnData           Place = "Fn API data handler"
	FnState          Place = "Fn API state handler"
	FnLogging        Place = "Fn API logging handler"
	FnProvision      Place = "Fn API provision handler"
	FnDescriptor     Place = "Fn API descriptor handler"
	CheckpointDriver Place = "checkpoint driver"
	CheckpointWriter Place = "checkpoint snapshot writer"
	CheckpointEnded  Place = "checkpoint subtask-ended notice"
	Sampler          Place = "job metrics sampler"
	JobService       Place = "job service handler"
	Expansion        Place = "expansion service handler"
	HTTPHandler      Place = "HTTP handler (UI, metrics)"
)

var hook atomic.Pointer[func(Place, string)]

// At calls the test hook, if one is set, at place in the work of job
// (empty for a request that belongs to no job). Tests make it panic. With
// no hook it is one atomic load.
func At(place Place, job string) {
	if f := hook.Load(); f != nil {
		(*f)(place, job)
	}
}

// AtCtx is At for the job WithJob put in ctx.
func AtCtx(place Place, ctx context.Context) {
	if f := hook.Load(); f != nil {
		(*f)(place, JobOf(ctx))
	}
}

// SetHook installs f as the test hook until restore is called. For tests
// only; they must not run in parallel with each other.
func SetHook(f func(place Place, job string)) (restore func()) {
	old := hook.Swap(&f)
	return func() { hook.Store(old) }
}

type jobKey struct{}

// WithJob returns ctx carrying the id of the job whose work runs under it,
// for At in places that reach only a context.
func WithJob(ctx context.Context, job string) context.Context {
	return context.WithValue(ctx, jobKey{}, job)
}

// JobOf returns the job WithJob put in ctx, or "".
func JobOf(ctx context.Context) string {
	s, _ := ctx.Value(jobKey{}).(string)
	return s
}
