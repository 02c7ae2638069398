package webui

import (
	"context"
	"errors"

	"github.com/weir-runner/weir/jobview"
)

// Backend is what the UI reads from and asks of the runner. The runner
// implements it; tests implement it with fakes.
//
// Jobs and Job return copies (jobview values are samples), so the handler
// encodes them without holding any lock of the backend's. The actions get the
// request's context, cancelled if the browser goes away.
type Backend interface {
	// Jobs returns every job the runner knows, in any order.
	Jobs() []jobview.Summary
	// Job returns the latest sample of one job, or false if there is no
	// job with that ID.
	Job(id string) (jobview.Job, bool)
	// Cancel asks the job to stop now.
	Cancel(ctx context.Context, id string) error
	// Drain asks the job to finish its input and fire every window.
	Drain(ctx context.Context, id string) error
	// Savepoint takes a savepoint and returns where it was written.
	Savepoint(ctx context.Context, id string) (location string, err error)
}

// Errors a Backend wraps (fmt.Errorf("...: %w", webui.ErrNotFound)) so the
// handler can answer with the right status. Any other error is a 500.
var (
	// ErrNotFound: there is no job with that ID (404).
	ErrNotFound = errors.New("webui: no such job")
	// ErrConflict: the job cannot do that in its present state, for
	// example a drain of a job that has already ended (409).
	ErrConflict = errors.New("webui: not possible in the job's state")
)

// statusOf maps a Backend's error to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrNotFound):
		return 404
	case errors.Is(err, ErrConflict):
		return 409
	default:
		return 500
	}
}
