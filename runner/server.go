package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"

	"github.com/weir-runner/weir/secure"
)

// ErrServerClosed is returned by Serve and Start after Stop, and by RPCs that
// would start new work while the server is stopping.
var ErrServerClosed = errors.New("weir: server closed")

// errCancelRequested is the cancellation cause of a job's context when Cancel
// (or Stop) asked for it, which tells a cancelled job from a failed one.
var errCancelRequested = errors.New("weir: job cancelled on request")

// ServerOptions configures a Server. The zero value is ready to use.
type ServerOptions struct {
	// StagingRoot is the directory under which each job gets its own staging
	// directory. Empty means a new temporary directory that Stop removes.
	StagingRoot string
	// KeepArtifacts keeps a job's staged artifacts after the job ends, for
	// debugging; by default they are removed.
	KeepArtifacts bool
	// PreparationTTL bounds how long a prepared job may wait for Run before
	// the server forgets it, so abandoned submissions do not pile up in a
	// long-lived server. Zero means one hour.
	PreparationTTL time.Duration
	// Logger receives the server's own log lines. Nil means slog.Default().
	Logger *slog.Logger
	// JobRetention is how long a job stays in the registry (GetJobs,
	// GetState and every call that names it) once it has ended; then the
	// server forgets it (retention.go). Zero keeps every job.
	JobRetention time.Duration
	// StateDir, if set, is where the server keeps the submission record of
	// each running job it could resume (named, checkpointed, its workers
	// not in its submitter); ResumeJobs starts them again after a
	// restart. Give the executor the same folder.
	StateDir string
	// Confinement limits what jobs may make the server do (confine.go).
	Confinement
	// Access is the TLS and tokens the job service's clients need (package
	// secure); nil asks for none, as the in-process runner's server.
	Access *secure.Policy
}

// EnsureDefaults fills in the zero fields that have defaults.
func (o *ServerOptions) EnsureDefaults() {
	if o.PreparationTTL <= 0 {
		o.PreparationTTL = time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Server is weir's job service: it implements Beam's JobService and
// ArtifactStagingService on one gRPC server and runs each submitted job with
// its Executor, several at a time. See the package documentation for the
// protocol and the job loop.
type Server struct {
	jobpb.UnimplementedJobServiceServer

	exec Executor
	opts ServerOptions
	grpc *grpc.Server
	// now, if set, is the clock of job retention (tests).
	now func() time.Time
	// budget counts staged bytes and running jobs (confine.go).
	budget budget

	// running counts job goroutines. Add happens under mu while !closed, so
	// Stop's Wait cannot miss a job that is about to start.
	running sync.WaitGroup

	mu struct {
		sync.Mutex
		endpoint string
		closed   bool
		// stagingRoot is created on first use; ownsRoot says Stop removes it.
		stagingRoot string
		ownsRoot    bool
		nextID      int
		preps       map[string]*preparation // by preparation ID
		byToken     map[string]*preparation // by staging token
		jobs        map[JobID]*Job
		order       []JobID // submission order, for GetJobs
	}
}

var _ jobpb.JobServiceServer = (*Server)(nil)

// NewServer returns a server that runs jobs with exec. It serves nothing
// until Serve or Start is called.
func NewServer(exec Executor, opts ServerOptions) *Server {
	opts.EnsureDefaults()
	s := &Server{
		exec: exec,
		opts: opts,
		// Pipelines with large serialized functions exceed gRPC's 4 MiB
		// default, in both directions (Prepare and GetPipeline).
		// The access policy's interceptors come first: a request without
		// a valid token reaches nothing else.
		grpc: grpc.NewServer(append(opts.Access.GRPCServerOptions("job service"),
			grpc.MaxRecvMsgSize(opts.maxRecvMsgSize()), grpc.MaxSendMsgSize(math.MaxInt32),
			grpc.ChainUnaryInterceptor(recoverUnary(opts.Logger)), grpc.ChainStreamInterceptor(recoverStream(opts.Logger)))...),
	}
	s.mu.preps = map[string]*preparation{}
	s.mu.byToken = map[string]*preparation{}
	s.mu.jobs = map[JobID]*Job{}
	jobpb.RegisterJobServiceServer(s.grpc, s)
	s.grpc.RegisterService(&savepointsDesc, s)
	s.grpc.RegisterService(&jobsDesc, s)
	jobpb.RegisterArtifactStagingServiceServer(s.grpc, &artifactStaging{s: s})
	return s
}

// Serve accepts connections on lis until Stop. It returns ErrServerClosed
// after Stop, like http.Server.Serve. Endpoint is valid once Serve has been
// entered; callers that need it at once should use Start.
func (s *Server) Serve(lis net.Listener) error {
	if err := s.bind(lis); err != nil {
		return err
	}
	return s.serve(lis)
}

// Start listens on addr (for example "localhost:8099" or "127.0.0.1:0") and
// serves in the background. Endpoint is valid when Start returns.
func (s *Server) Start(addr string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("weir: job service: listen on %s: %w", addr, err)
	}
	if err := s.bind(lis); err != nil {
		return err
	}
	go func() {
		if err := s.serve(lis); err != nil && !errors.Is(err, ErrServerClosed) {
			s.opts.Logger.Error("weir: job service stopped serving", "endpoint", s.Endpoint(), "err", err)
		}
	}()
	return nil
}

func (s *Server) bind(lis net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		lis.Close()
		return ErrServerClosed
	}
	s.mu.endpoint = advertisedAddr(lis.Addr())
	return nil
}

func (s *Server) serve(lis net.Listener) error {
	err := s.grpc.Serve(lis)
	s.mu.Lock()
	closed := s.mu.closed
	s.mu.Unlock()
	if closed || err == nil || errors.Is(err, grpc.ErrServerStopped) {
		return ErrServerClosed
	}
	return fmt.Errorf("weir: job service on %s: %w", lis.Addr(), err)
}

// advertisedAddr turns a listening address into one clients can dial: a
// wildcard host (0.0.0.0, ::) becomes localhost.
func advertisedAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// Endpoint returns the host:port clients dial, or "" before Serve or Start.
func (s *Server) Endpoint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.endpoint
}

// Stop shuts the server down in the order of http.Server.Shutdown: it refuses
// new preparations and runs, cancels every running job, waits for the job
// goroutines, then stops gRPC gracefully. If ctx ends first, gRPC is stopped
// at once and Stop returns ctx's error; job goroutines whose executor ignores
// cancellation keep running until it returns.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.mu.closed = true
	var live []*Job
	for _, j := range s.mu.jobs {
		if st, _ := j.State(); !IsTerminal(st) {
			live = append(live, j)
		}
	}
	s.mu.Unlock()

	for _, j := range live {
		// Stopped by the shutdown, not by its user: its record stays and
		// the next server resumes it.
		j.shutdown.Store(true)
		s.cancelJob(j)
	}
	err := waitCtx(ctx, s.running.Wait)
	if err == nil {
		err = waitCtx(ctx, s.grpc.GracefulStop)
	}
	if err != nil {
		s.grpc.Stop()
		err = fmt.Errorf("weir: stopping job service: %w", err)
	}
	s.removeStaging(err == nil)
	return err
}

// GracefulStop is Stop without a deadline.
func (s *Server) GracefulStop() { _ = s.Stop(context.Background()) }

func waitCtx(ctx context.Context, f func()) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// removeStaging deletes the staging directories of preparations that never
// ran and, if every job has ended, the staging root the server created.
func (s *Server) removeStaging(jobsEnded bool) {
	s.mu.Lock()
	var dirs []string
	for id, p := range s.mu.preps {
		if dir, ok := p.close(); ok && dir != "" {
			dirs = append(dirs, dir)
		}
		delete(s.mu.preps, id)
	}
	clear(s.mu.byToken)
	if jobsEnded && s.mu.ownsRoot && s.mu.stagingRoot != "" {
		dirs = append(dirs, s.mu.stagingRoot)
		s.mu.stagingRoot, s.mu.ownsRoot = "", false
	}
	s.mu.Unlock()
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			s.opts.Logger.Warn("weir: removing staging directory", "dir", d, "err", err)
		}
	}
}

// Job returns the job with the given ID, or nil, also for a job that
// ended longer ago than the retention.
func (s *Server) Job(id JobID) *Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneJobsLocked()
	return s.mu.jobs[id]
}

// Jobs returns every job submitted to the server, oldest first, but those
// that ended longer ago than the retention.
func (s *Server) Jobs() []*Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneJobsLocked()
	out := make([]*Job, 0, len(s.mu.order))
	for _, id := range s.mu.order {
		out = append(out, s.mu.jobs[id])
	}
	return out
}
