package kafka

import (
	"context"
	"time"

	"github.com/weir-runner/weir/twophase"
)

// Clock gives processing time. Tests use a fake one.
type Clock interface {
	Now() time.Time
}

// WallClock reads the system clock.
type WallClock struct{}

// Now implements Clock.
func (WallClock) Now() time.Time { return time.Now() }

// backoff returns how long to wait before retry number attempt (from 0)
// of a failed connection, metadata request or produce: the schedule of
// the two-phase-commit sinks' retries (100 ms doubling up to 10 s).
func backoff(attempt int) time.Duration { return twophase.Backoff(attempt) }

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
