package twophase

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as a failure a retry cannot fix (a fenced producer,
// a missing folder): Retry returns it at once, and the job fails.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// IsPermanent reports whether err, or an error it wraps, was marked
// Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// Backoff is the wait before retry attempt (0 the first): 100 ms doubling
// to 10 s, the Kafka reader's and writer's back-off.
func Backoff(attempt int) time.Duration {
	d := 100 * time.Millisecond
	for range min(attempt, 7) {
		d *= 2
	}
	return min(d, 10*time.Second)
}

// Retry calls fn until it succeeds, returns a permanent error, or ctx
// ends, waiting Backoff between attempts; onRetry (if set) hears each
// failure that is retried. A commit must be idempotent to be retried: an
// attempt may have succeeded without its caller knowing.
func Retry(ctx context.Context, what string, fn func(ctx context.Context) error, onRetry func(error)) error {
	return RetryWith(ctx, what, Backoff, fn, onRetry)
}

// RetryWith is Retry waiting backoff(attempt) before each retry.
func RetryWith(ctx context.Context, what string, backoff func(int) time.Duration, fn func(ctx context.Context) error, onRetry func(error)) error {
	for attempt := 0; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if IsPermanent(err) {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (%w)", what, ctx.Err(), err)
		}
		if onRetry != nil {
			onRetry(fmt.Errorf("%s: %w (retrying)", what, err))
		}
		t := time.NewTimer(backoff(attempt))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w (%w)", what, ctx.Err(), err)
		}
	}
}
