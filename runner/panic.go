package runner

import (
	"context"
	"log/slog"
	"runtime/debug"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The job service's handlers (JobService, artifact staging, savepoints,
// jobs) run on gRPC's goroutines, where a panic would end the process and
// every job in it. These interceptors turn one into an Internal status for
// that request, logged with its stack.

func recoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = handlerPanicked(log, info.FullMethod, r)
			}
		}()
		return h(ctx, req)
	}
}

func recoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = handlerPanicked(log, info.FullMethod, r)
			}
		}()
		return h(srv, ss)
	}
}

// handlerPanicked logs a handler's panic with its stack and returns the
// status its caller sees. Call it from the deferred function that recovered.
func handlerPanicked(log *slog.Logger, method string, r any) error {
	log.Error("weir: gRPC handler panicked", "method", method, "panic", r, "stack", string(debug.Stack()))
	return status.Errorf(codes.Internal, "weir: %s: panic: %v", method, r)
}
