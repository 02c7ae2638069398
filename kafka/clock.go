package kafka

import (
	"context"
	"time"
)

// Clock gives processing time. Tests use a fake one.
type Clock interface {
	Now() time.Time
}

// WallClock reads the system clock.
type WallClock struct{}

// Now implements Clock.
func (WallClock) Now() time.Time { return time.Now() }

// Back-off between retries of a failed connection, metadata request or
// produce: doubling from backoffMin up to backoffMax.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 10 * time.Second
)

// backoff returns how long to wait before retry number attempt (from 0).
func backoff(attempt int) time.Duration {
	if attempt < 0 {
		attempt = 0
	}
	if attempt >= 7 { // 100 ms << 7 is past the cap
		return backoffMax
	}
	return min(backoffMin<<attempt, backoffMax)
}

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
