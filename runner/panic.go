package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"google.golang.org/grpc"

	"github.com/weir-runner/weir/internal/contain"
)

// The job service's handlers (JobService, artifact staging, savepoints,
// jobs) run on gRPC's goroutines, where a panic would end the process and
// every job in it. These interceptors turn one into an Internal status for
// that request, logged with its stack.

func recoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	recovered := contain.UnaryServer(logHandlerPanic(log))
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return recovered(ctx, req, info, func(ctx context.Context, req any) (any, error) {
			contain.At(contain.JobService, "")
			return h(ctx, req)
		})
	}
}

func recoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return contain.StreamServer(logHandlerPanic(log))
}

func logHandlerPanic(log *slog.Logger) contain.OnPanic {
	return func(_ context.Context, method string, p *contain.PanicError) {
		log.Error("weir: gRPC handler panicked", "method", method, "panic", p.Value, "stack", string(p.Stack))
	}
}

// recoverHTTP is the same for the HTTP server's handlers (the UI, its
// API, /metrics): the request answers 500 and the panic is logged with its
// stack, where net/http alone would drop the connection and log to its
// ErrorLog.
func recoverHTTP(log *slog.Logger, h http.Handler) http.Handler {
	return contain.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		contain.At(contain.HTTPHandler, "")
		h.ServeHTTP(w, r)
	}), func(r *http.Request, p *contain.PanicError) {
		log.Error("weir: HTTP handler panicked", "path", r.URL.Path, "panic", p.Value, "stack", string(p.Stack))
	})
}

// goContained runs f on a goroutine of a job's that has no error to
// return but must not end the process if it panics: a panic fails the
// job, with the stack, through fail, naming place. done, if set, is closed
// when f has returned. f calls contain.At(place) itself, once its own
// deferred bookkeeping is in place, as a real panic would find it.
func goContained(place contain.Place, fail func(error), done chan<- struct{}, f func()) {
	go func() {
		if done != nil {
			defer close(done)
		}
		err := contain.Call(func() error { f(); return nil })
		if err != nil {
			fail(fmt.Errorf("%s: %w", place, err))
		}
	}()
}

// panicked reports whether err is, or wraps, a panic recovered at one of
// a job's boundaries.
func panicked(err error) bool {
	var p *contain.PanicError
	return errors.As(err, &p)
}
