package fnapi

import (
	"context"
	"fmt"

	"github.com/weir-runner/weir/internal/contain"
)

// handlerPanicked is the Fn API's answer to a panic in one of its
// handlers (package contain recovered it; the request answers Internal).
// The handlers run the runner's code for one worker's messages (state
// requests against the job's store, a bundle's output, its logs), so the
// worker is lost with the panic as the reason: every bundle on it fails
// with the stack, and so does the job. It is not ErrWorkerLost, which the
// executor retries on a new worker: the same messages would most likely
// panic the same way. A request that names no worker fails alone.
func (s *Server) handlerPanicked(ctx context.Context, method string, p *contain.PanicError) {
	w, err := s.workerFor(ctx)
	if err != nil {
		return
	}
	w.lose(fmt.Errorf("fnapi: worker %s: %s: %w", w.ID, method, p))
}
