// Package contain is where weir recovers panics: the boundaries between
// the server and the work of one job or one request, so that a panic in
// that work fails the job or the request and never the process.
//
// A recover belongs only where a goroutine starts running work that is
// one job's or one request's, and nowhere else: recovering deeper would
// hide bugs in the runner's own state. The boundaries are
//
//   - each executor subtask (an operator, a source, a sink) and an SDF
//     run's helper goroutines: the panic is the subtask's error, which
//     fails the graph and so the job (package executor);
//   - the Fn API server's handlers: the panic loses the worker whose
//     request it was, with the panic as the reason, which fails the
//     bundles on it and so the job (package fnapi); the request answers
//     Internal;
//   - a job's other goroutines (the checkpoint driver, snapshot writers,
//     the metrics sampler, store commits): the panic cancels the job with
//     itself as the cause (package runner, package state);
//   - the job service's, the expansion service's and the HTTP server's
//     handlers: the request answers Internal (or 500) and the panic is
//     logged with its stack (UnaryServer, StreamServer, HTTP).
//
// Whatever a goroutine holds when it panics must be released as the stack
// unwinds (defer mu.Unlock()), or the next user of the lock blocks for
// ever and the job that should have failed hangs instead.
//
// A Go runtime fatal error (a stack overflow, a concurrent map write,
// running out of memory) is not a panic: no recover catches it. Those are
// prevented where outside bytes are decoded, which the fuzz targets check
// (docs/reliability.md).
//
// At is a test hook at each boundary, so a test can panic there and show
// the boundary holds (runner's TestPanicContainedAtEveryPlace).
package contain
