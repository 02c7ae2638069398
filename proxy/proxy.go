package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strings"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/secure"
)

// Options configures a Proxy.
type Options struct {
	// Job is the connection to the job server: JobService, artifact
	// staging, and whatever else is not Expansion's.
	Job grpc.ClientConnInterface
	// Expansion, if set, is the connection to the expansion service;
	// without it ExpansionService calls are answered Unimplemented.
	Expansion grpc.ClientConnInterface
	// Logger receives one line per call that fails in the proxy itself.
	// Nil means slog.Default().
	Logger *slog.Logger
}

// Proxy forwards gRPC calls; see the package documentation.
type Proxy struct {
	opts Options
	grpc *grpc.Server
}

var (
	expansionPrefix = "/" + jobpb.ExpansionService_ServiceDesc.ServiceName + "/"
	prepareMethod   = "/" + jobpb.JobService_ServiceDesc.ServiceName + "/Prepare"
)

// New returns a proxy; it serves nothing until Serve.
func New(opts Options) *Proxy {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	p := &Proxy{opts: opts}
	// Messages pass as bytes; the limits are the upstream's to enforce.
	p.grpc = grpc.NewServer(grpc.ForceServerCodecV2(rawCodec{}), grpc.UnknownServiceHandler(p.forward),
		grpc.MaxRecvMsgSize(math.MaxInt32), grpc.MaxSendMsgSize(math.MaxInt32))
	return p
}

// Dial connects to an upstream at endpoint as client says, with gRPC's
// message limits lifted as the job server lifts them.
func Dial(endpoint string, client secure.Client) (*grpc.ClientConn, error) {
	opts, err := client.DialOptions(endpoint)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(endpoint, opts...)
	if err != nil {
		return nil, fmt.Errorf("weir proxy: upstream %s: %w", endpoint, err)
	}
	return conn, nil
}

// Serve accepts connections on lis until Stop; then it returns nil.
func (p *Proxy) Serve(lis net.Listener) error {
	if err := p.grpc.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("weir proxy on %s: %w", lis.Addr(), err)
	}
	return nil
}

// Stop lets calls in flight finish unless ctx ends first; then it cuts
// them off and returns ctx's error.
func (p *Proxy) Stop(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		p.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		p.grpc.Stop()
		<-done
		return ctx.Err()
	}
}

func (p *Proxy) upstream(method string) (grpc.ClientConnInterface, error) {
	if strings.HasPrefix(method, expansionPrefix) {
		if p.opts.Expansion == nil {
			return nil, status.Errorf(codes.Unimplemented, "weir proxy: %s: no expansion service upstream (weir proxy --expansion-endpoint)", method)
		}
		return p.opts.Expansion, nil
	}
	return p.opts.Job, nil
}

// forward is the handler of every call.
func (p *Proxy) forward(_ any, down grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(down)
	if !ok {
		return status.Error(codes.Internal, "weir proxy: a call without a method")
	}
	conn, err := p.upstream(method)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(down.Context())
	defer cancel()
	in, _ := metadata.FromIncomingContext(down.Context())
	ctx = metadata.NewOutgoingContext(ctx, forwardable(in))
	up, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method,
		grpc.ForceCodecV2(rawCodec{}), grpc.MaxCallRecvMsgSize(math.MaxInt32), grpc.MaxCallSendMsgSize(math.MaxInt32))
	if err != nil {
		return err
	}
	var rewrite func([]byte) ([]byte, error)
	if method == prepareMethod {
		rewrite = p.rewritePrepare(down.Context())
	}
	sent := make(chan error, 1)
	go func() { sent <- toUpstream(down, up) }()
	received := make(chan error, 1)
	go func() { received <- toClient(up, down, rewrite) }()
	for {
		select {
		case err := <-sent:
			if err != nil {
				// The client's side broke: the upstream call is abandoned,
				// and toClient, which the cancellation ends, waited for:
				// it must not touch the stream once this handler returns.
				cancel()
				<-received
				p.opts.Logger.Debug("weir proxy: client stream ended", "method", method, "err", err)
				return status.Errorf(codes.Canceled, "weir proxy: %s: reading the client: %v", method, err)
			}
			sent = nil // the client is done sending; wait for the upstream
		case err := <-received:
			return err
		}
	}
}

// toUpstream moves the client's messages upstream and half-closes at the
// client's end. nil means the client ended its side normally.
func toUpstream(down grpc.ServerStream, up grpc.ClientStream) error {
	for {
		f := &frame{}
		if err := down.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				return up.CloseSend()
			}
			return err
		}
		if err := up.SendMsg(f); err != nil {
			// The upstream ended the call; toClient reports its status.
			return nil
		}
	}
}

// toClient moves the upstream's header, messages and trailer to the
// client, and returns the upstream's status: nil for OK.
func toClient(up grpc.ClientStream, down grpc.ServerStream, rewrite func([]byte) ([]byte, error)) error {
	first := true
	for {
		f := &frame{}
		err := up.RecvMsg(f)
		if first {
			first = false
			// The header has arrived with the first message or the status.
			if md, herr := up.Header(); herr == nil && len(md) > 0 {
				if serr := down.SendHeader(md); serr != nil {
					return serr
				}
			}
		}
		if err != nil {
			down.SetTrailer(up.Trailer())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if rewrite != nil {
			if f.data, err = rewrite(f.data); err != nil {
				return err
			}
		}
		if err := down.SendMsg(f); err != nil {
			return err
		}
	}
}

// rewritePrepare returns the rewrite of a Prepare response: its artifact
// staging endpoint becomes the proxy's address as the client reached it.
func (p *Proxy) rewritePrepare(ctx context.Context) func([]byte) ([]byte, error) {
	return func(data []byte) ([]byte, error) {
		pr, ok := peer.FromContext(ctx)
		if !ok || pr.LocalAddr == nil {
			return nil, status.Error(codes.Internal, "weir proxy: Prepare: the proxy's own address is unknown")
		}
		var resp jobpb.PrepareJobResponse
		if err := proto.Unmarshal(data, &resp); err != nil {
			return nil, status.Errorf(codes.Internal, "weir proxy: Prepare: the server's response does not decode: %v", err)
		}
		resp.ArtifactStagingEndpoint = stagingEndpoint(pr.LocalAddr.String())
		return proto.Marshal(&resp)
	}
}

// forwardable is the client's metadata less what gRPC sets itself and
// the client's own authorization, which must not reach the upstream next
// to the proxy's.
func forwardable(in metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, v := range in {
		switch {
		case strings.HasPrefix(k, ":"), strings.HasPrefix(k, "grpc-"),
			k == secure.AuthorizationKey, k == "content-type", k == "user-agent", k == "te":
			continue
		}
		out[k] = v
	}
	return out
}
