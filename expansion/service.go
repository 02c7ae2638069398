package expansion

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync/atomic"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"

	"github.com/weir-runner/weir/internal/contain"
	"github.com/weir-runner/weir/pgio"
)

// Options configures a Service. The zero value is ready to use.
type Options struct {
	// Logger receives one line per expansion. Nil means slog.Default().
	Logger *slog.Logger
}

// Service implements Beam's ExpansionService for Beam's kafkaio URNs. It is
// stateless apart from a counter for requests without a namespace, so one
// Service serves any number of concurrent calls.
type Service struct {
	jobpb.UnimplementedExpansionServiceServer

	log *slog.Logger
	seq atomic.Uint64 // names components of requests without a namespace
}

var _ jobpb.ExpansionServiceServer = (*Service)(nil)

// NewService returns a Service.
func NewService(opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{log: opts.Logger}
}

// Expand expands one transform. A request weir cannot expand gets a
// response whose Error says why, never an RPC error: the SDKs retry RPC
// errors with back-off but report ExpansionResponse.Error at once.
func (s *Service) Expand(_ context.Context, req *jobpb.ExpansionRequest) (*jobpb.ExpansionResponse, error) {
	contain.At(contain.Expansion, "")
	urn := req.GetTransform().GetSpec().GetUrn()
	res, err := s.expand(req)
	if err != nil {
		s.log.Warn("weir: expansion refused", "urn", urn, "transform", req.GetTransform().GetUniqueName(), "err", err)
		return &jobpb.ExpansionResponse{Error: "weir expansion service: " + err.Error()}, nil
	}
	s.log.Info("weir: expanded", "urn", urn, "transform", req.GetTransform().GetUniqueName(), "into", res.GetTransform().GetSpec().GetUrn())
	return res, nil
}

func (s *Service) expand(req *jobpb.ExpansionRequest) (*jobpb.ExpansionResponse, error) {
	t := req.GetTransform()
	if t == nil {
		return nil, fmt.Errorf("the request has no transform")
	}
	x := ids{ns: req.GetNamespace()}
	if x.ns == "" {
		x.ns = fmt.Sprintf("weir%d", s.seq.Add(1))
	}
	switch urn := t.GetSpec().GetUrn(); urn {
	case ReadWithoutMetadataURN, ReadWithMetadataURN:
		cfg, err := readConfig(urn, t.GetSpec().GetPayload())
		if err != nil {
			return nil, err
		}
		return readResponse(req, x, cfg)
	case WriteURN:
		cfg, err := writeConfig(urn, t.GetSpec().GetPayload())
		if err != nil {
			return nil, err
		}
		return writeResponse(req, x, cfg)
	case PostgresWriteURN:
		cfg, err := pgWriteConfig(urn, t.GetSpec().GetPayload())
		if err != nil {
			return nil, err
		}
		return sinkResponse(req, x, pgio.WriteURN, cfg, checkRows(cfg))
	case WriteWithHeadersURN:
		return nil, fmt.Errorf("transform %q: %s is not supported: weir's Kafka write takes KV<bytes, bytes> and writes no headers, topic, partition or timestamp per record; use WriteToKafka without with_headers",
			t.GetUniqueName(), urn)
	default:
		return nil, fmt.Errorf("transform %q: unknown URN %q: weir expands only %s, %s, %s and %s",
			t.GetUniqueName(), urn, ReadWithoutMetadataURN, ReadWithMetadataURN, WriteURN, PostgresWriteURN)
	}
}

// DiscoverSchemaTransform lists no schema transforms: weir expands Beam's
// kafkaio URNs only.
func (s *Service) DiscoverSchemaTransform(context.Context, *jobpb.DiscoverSchemaTransformRequest) (*jobpb.DiscoverSchemaTransformResponse, error) {
	return &jobpb.DiscoverSchemaTransformResponse{}, nil
}

// Server serves a Service over gRPC on its own listener.
type Server struct {
	grpc *grpc.Server
}

// NewServer returns a server for svc. It serves nothing until Serve. opts
// are further gRPC server options: weir serve's TLS and token
// interceptors (secure.Policy.GRPCServerOptions).
func NewServer(svc *Service, opts ...grpc.ServerOption) *Server {
	// Requests carry the input PCollections' coders, which can hold large
	// serialized functions; the job server lifts gRPC's 4 MiB limit too.
	// A panic expanding one request answers it Internal and is logged with
	// its stack; it never ends the server.
	g := grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(math.MaxInt32), grpc.MaxSendMsgSize(math.MaxInt32),
		grpc.ChainUnaryInterceptor(contain.UnaryServer(func(_ context.Context, method string, p *contain.PanicError) {
			svc.log.Error("weir: expansion service panicked", "method", method, "panic", p.Value, "stack", string(p.Stack))
		})))...)
	jobpb.RegisterExpansionServiceServer(g, svc)
	return &Server{grpc: g}
}

// Serve accepts connections on lis until Stop, then returns nil.
func (s *Server) Serve(lis net.Listener) error {
	if err := s.grpc.Serve(lis); err != nil {
		return fmt.Errorf("weir: expansion service on %s: %w", lis.Addr(), err)
	}
	return nil
}

// Stop lets calls in flight finish, unless ctx ends first; then it closes
// every connection at once and returns ctx's error.
func (s *Server) Stop(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
		return ctx.Err()
	}
}
