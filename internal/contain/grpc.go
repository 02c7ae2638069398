package contain

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// OnPanic hears of a panic a gRPC handler recovered from: it logs it, or
// fails the work the request belonged to. It must not panic.
type OnPanic func(ctx context.Context, method string, p *PanicError)

// UnaryServer recovers a panic in a unary handler: on hears of it and the
// request answers Internal, naming the method.
func UnaryServer(on OnPanic) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = internal(ctx, on, info.FullMethod, Recovered(r))
			}
		}()
		return h(ctx, req)
	}
}

// StreamServer is UnaryServer for streaming handlers.
func StreamServer(on OnPanic) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				ctx := context.Background()
				if ss != nil {
					ctx = ss.Context()
				}
				err = internal(ctx, on, info.FullMethod, Recovered(r))
			}
		}()
		return h(srv, ss)
	}
}

func internal(ctx context.Context, on OnPanic, method string, p *PanicError) error {
	if on != nil {
		on(ctx, method, p)
	}
	return status.Errorf(codes.Internal, "weir: %s: panic: %v", method, p.Value)
}
