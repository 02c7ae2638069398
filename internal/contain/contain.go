package contain

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a panic recovered at a boundary, with the stack of the
// goroutine that panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }

// Recovered turns a value recovered from a panic into a PanicError. Call
// it from the deferred function that recovered, while the stack still
// holds the panic's frames.
func Recovered(r any) *PanicError { return &PanicError{Value: r, Stack: debug.Stack()} }

// Call runs f and returns its error, or a panic in it as a *PanicError.
func Call(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = Recovered(r)
		}
	}()
	return f()
}
