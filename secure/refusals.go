package secure

import (
	"log/slog"
	"sync"
	"time"
)

// refusalEvery is how often refused requests are logged at most: a client
// retrying with a bad token, or someone guessing, must not flood the log,
// yet an operator must see that it happens.
const refusalEvery = time.Minute

// refusalLog logs refused requests: the first at once, then at most one
// line per refusalEvery, which counts those it did not log.
type refusalLog struct {
	log *slog.Logger
	now func() time.Time

	mu struct {
		sync.Mutex
		last       time.Time // when the last line was written; zero: never
		suppressed int       // refusals since then, not logged
	}
}

func newRefusalLog(log *slog.Logger, now func() time.Time) *refusalLog {
	if now == nil {
		now = time.Now
	}
	return &refusalLog{log: log, now: now}
}

// note records one refused request. r may be nil (a Policy made without
// NewPolicy), and then nothing is logged.
func (r *refusalLog) note(listener, addr, subject, request, reason string) {
	if r == nil {
		return
	}
	now := r.now()
	r.mu.Lock()
	if !r.mu.last.IsZero() && now.Sub(r.mu.last) < refusalEvery {
		r.mu.suppressed++
		r.mu.Unlock()
		return
	}
	suppressed := r.mu.suppressed
	r.mu.last, r.mu.suppressed = now, 0
	r.mu.Unlock()
	attrs := []any{"listener", listener, "peer", addr, "request", request, "reason", reason}
	if subject != "" {
		attrs = append(attrs, "client_certificate", subject)
	}
	if suppressed > 0 {
		attrs = append(attrs, "also_refused_since_last_line", suppressed)
	}
	r.log.Warn("weir: request refused", attrs...)
}
