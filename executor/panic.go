package executor

import (
	"fmt"
	"runtime/debug"
)

// panicked turns a value recovered from a panic into an error carrying the
// stack of the panicking goroutine, for the caller to wrap with what
// panicked: a panic in user code (an operator, a source, a sink, an SDK's
// answer) fails its subtask and so its job, never the process. Call it from
// the deferred function that recovered, while the stack still holds the
// panic's frames.
func panicked(r any) error {
	return fmt.Errorf("panic: %v\n%s", r, debug.Stack())
}
