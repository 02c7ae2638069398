package fnapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/internal/contain"
)

// Options configure a Server.
type Options struct {
	// JobID and JobName go into the workers' provision info.
	JobID, JobName string
	// PipelineOptions are handed to workers as they are.
	PipelineOptions *structpb.Struct
	// Artifacts serves workers their dependencies; nil serves none.
	Artifacts jobpb.ArtifactRetrievalServiceServer
	// Dependencies lists each environment's artifacts for provision info.
	Dependencies map[string][]*pipepb.ArtifactInformation
	// OnLog receives every log entry workers send. It must not block.
	OnLog func(workerID string, e *fnpb.LogEntry)
	// Host is the address to listen on, and the host of the endpoint
	// workers are told to dial; default DefaultHost.
	Host string
	// ConnectTimeout bounds how long a worker weir started (EXTERNAL,
	// PROCESS) may take to open its control stream; past it the worker
	// fails, with an error that names it and its environment. Default
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
}

// DefaultHost is where the Fn API listens unless told otherwise: loopback,
// since it has neither TLS nor authentication (Beam's SDK harnesses dial
// it in plaintext), and LOOPBACK and PROCESS workers run on this machine.
const DefaultHost = "127.0.0.1"

// DefaultConnectTimeout is Options.ConnectTimeout when unset: a Python or
// Java worker starts in seconds, a busy machine's in tens of them.
const DefaultConnectTimeout = 2 * time.Minute

// Server serves the Fn API for one job on one port.
type Server struct {
	opts Options
	lis  net.Listener
	grpc *grpc.Server

	mu struct {
		sync.Mutex
		workers     map[string]*Worker
		descriptors map[string]*fnpb.ProcessBundleDescriptor
	}
	wg sync.WaitGroup
}

// NewServer listens on a free port and starts serving.
func NewServer(opts Options) (*Server, error) {
	if opts.Host == "" {
		opts.Host = DefaultHost
	}
	lis, err := net.Listen("tcp", net.JoinHostPort(opts.Host, "0"))
	if err != nil {
		return nil, fmt.Errorf("fnapi: listen: %w", err)
	}
	s := &Server{opts: opts, lis: lis}
	s.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(256<<20), grpc.MaxSendMsgSize(256<<20),
		grpc.ChainUnaryInterceptor(contain.UnaryServer(s.handlerPanicked)),
		grpc.ChainStreamInterceptor(contain.StreamServer(s.handlerPanicked)))
	s.mu.workers = map[string]*Worker{}
	s.mu.descriptors = map[string]*fnpb.ProcessBundleDescriptor{}
	fnpb.RegisterBeamFnControlServer(s.grpc, controlService{s: s})
	fnpb.RegisterBeamFnDataServer(s.grpc, dataService{s: s})
	fnpb.RegisterBeamFnStateServer(s.grpc, stateService{s: s})
	fnpb.RegisterBeamFnLoggingServer(s.grpc, loggingService{s: s})
	fnpb.RegisterProvisionServiceServer(s.grpc, provisionService{s: s})
	if opts.Artifacts != nil {
		jobpb.RegisterArtifactRetrievalServiceServer(s.grpc, opts.Artifacts)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.grpc.Serve(lis)
	}()
	return s, nil
}

// Endpoint is the address workers dial.
func (s *Server) Endpoint() string { return s.lis.Addr().String() }

// APIDescriptor is the endpoint as the protocol describes it.
func (s *Server) APIDescriptor() *pipepb.ApiServiceDescriptor {
	return &pipepb.ApiServiceDescriptor{Url: s.Endpoint()}
}

// RegisterDescriptor makes a process bundle descriptor available to workers.
func (s *Server) RegisterDescriptor(d *fnpb.ProcessBundleDescriptor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.descriptors[d.GetId()] = d
}

// Stop fails every worker's pending work, stops workers and the server.
func (s *Server) Stop() {
	s.mu.Lock()
	ws := make([]*Worker, 0, len(s.mu.workers))
	for _, w := range s.mu.workers {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
	s.grpc.Stop()
	s.wg.Wait()
}

// ExpectWorker registers a worker that something other than StartWorker
// starts (a test's fake, an operator's own pool); its connections must carry
// worker_id metadata equal to id.
func (s *Server) ExpectWorker(id, env string) *Worker { return s.newWorker(id, env) }

// newWorker registers a worker before it is started, so its connections find
// it whichever arrives first.
func (s *Server) newWorker(id, env string) *Worker {
	w := newWorker(id, env, s.opts.OnLog)
	s.mu.Lock()
	s.mu.workers[id] = w
	s.mu.Unlock()
	return w
}

// ErrUnknownWorker is returned to a connection that names no started worker.
var ErrUnknownWorker = errors.New("fnapi: unknown worker")

func (s *Server) workerFor(ctx context.Context) (*Worker, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	ids := md.Get("worker_id")
	if len(ids) != 1 {
		return nil, status.Error(codes.InvalidArgument, "fnapi: connection lacks worker_id metadata")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.mu.workers[ids[0]]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "%v %q", ErrUnknownWorker, ids[0])
	}
	return w, nil
}

type controlService struct {
	fnpb.UnimplementedBeamFnControlServer
	s *Server
}

func (c controlService) Control(stream fnpb.BeamFnControl_ControlServer) error {
	w, err := c.s.workerFor(stream.Context())
	if err != nil {
		return err
	}
	contain.At(contain.FnControl, c.s.opts.JobID)
	return w.serveControl(stream)
}

func (c controlService) GetProcessBundleDescriptor(_ context.Context, req *fnpb.GetProcessBundleDescriptorRequest) (*fnpb.ProcessBundleDescriptor, error) {
	contain.At(contain.FnDescriptor, c.s.opts.JobID)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	d, ok := c.s.mu.descriptors[req.GetProcessBundleDescriptorId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "fnapi: no process bundle descriptor %q", req.GetProcessBundleDescriptorId())
	}
	return d, nil
}

type dataService struct {
	fnpb.UnimplementedBeamFnDataServer
	s *Server
}

func (d dataService) Data(stream fnpb.BeamFnData_DataServer) error {
	w, err := d.s.workerFor(stream.Context())
	if err != nil {
		return err
	}
	contain.At(contain.FnData, d.s.opts.JobID)
	return w.serveData(stream)
}

type stateService struct {
	fnpb.UnimplementedBeamFnStateServer
	s *Server
}

func (st stateService) State(stream fnpb.BeamFnState_StateServer) error {
	w, err := st.s.workerFor(stream.Context())
	if err != nil {
		return err
	}
	contain.At(contain.FnState, st.s.opts.JobID)
	return w.serveState(stream)
}

type provisionService struct {
	fnpb.UnimplementedProvisionServiceServer
	s *Server
}

func (p provisionService) GetProvisionInfo(ctx context.Context, _ *fnpb.GetProvisionInfoRequest) (*fnpb.GetProvisionInfoResponse, error) {
	w, err := p.s.workerFor(ctx)
	if err != nil {
		return nil, err
	}
	contain.At(contain.FnProvision, p.s.opts.JobID)
	ep := p.s.APIDescriptor()
	return &fnpb.GetProvisionInfoResponse{Info: &fnpb.ProvisionInfo{
		PipelineOptions:  p.s.opts.PipelineOptions,
		LoggingEndpoint:  ep,
		ArtifactEndpoint: ep,
		ControlEndpoint:  ep,
		Dependencies:     p.s.opts.Dependencies[w.env],
		RetrievalToken:   p.s.opts.JobID,
	}}, nil
}
