package fnapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// Environment URNs weir can start workers for.
const (
	URNEnvExternal = "beam:env:external:v1"
	URNEnvProcess  = "beam:env:process:v1"
	URNEnvDocker   = "beam:env:docker:v1"
)

// SupportedEnvironment reports whether StartWorker can start env, and why not.
func SupportedEnvironment(env *pipepb.Environment) error {
	switch env.GetUrn() {
	case URNEnvExternal, URNEnvProcess:
		return nil
	case URNEnvDocker:
		return fmt.Errorf("environment %s: DOCKER environments are not supported; use LOOPBACK, EXTERNAL or PROCESS", env.GetUrn())
	}
	return fmt.Errorf("environment URN %q is not supported", env.GetUrn())
}

var workerSeq atomic.Int64

// ErrNotConnected is a worker that was started but never opened its
// control stream. It is not ErrWorkerLost: starting another the same way
// would most likely fail the same way (a worker pool whose workers cannot
// import the SDK, a wrong endpoint), so the job fails at once.
var ErrNotConnected = errors.New("fnapi: worker did not connect")

// awaitConnect fails w if it has not connected within the server's
// connect timeout. The goroutine ends when w connects, is lost or stopped,
// or the timeout passes.
func (s *Server) awaitConnect(w *Worker, what string) {
	d := s.opts.ConnectTimeout
	if d <= 0 {
		d = DefaultConnectTimeout
	}
	go func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-w.connected:
		case <-w.done:
		case <-t.C:
			w.lose(fmt.Errorf("%w: worker %s of %s did not open its control stream within %v", ErrNotConnected, w.ID, what, d))
		}
	}()
}

// StartWorker starts one SDK worker for environment envID and returns once
// it has been asked to start; its connections arrive on their own. stop
// ends the worker (for EXTERNAL pools, with StopWorker; for PROCESS, by
// killing it).
func (s *Server) StartWorker(ctx context.Context, envID string, env *pipepb.Environment) (w *Worker, stop func(), err error) {
	id := fmt.Sprintf("%s-%s-w%d", s.opts.JobID, envID, workerSeq.Add(1))
	w = s.newWorker(id, envID)
	ep := s.APIDescriptor()
	switch env.GetUrn() {
	case URNEnvExternal:
		var pl pipepb.ExternalPayload
		if err := proto.Unmarshal(env.GetPayload(), &pl); err != nil {
			return nil, nil, fmt.Errorf("environment %s: bad external payload: %w", envID, err)
		}
		addr := pl.GetEndpoint().GetUrl()
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, nil, fmt.Errorf("environment %s: dial worker pool %s: %w", envID, addr, err)
		}
		pool := fnpb.NewBeamFnExternalWorkerPoolClient(conn)
		resp, err := pool.StartWorker(ctx, &fnpb.StartWorkerRequest{
			WorkerId: id, ControlEndpoint: ep, LoggingEndpoint: ep,
			ArtifactEndpoint: ep, ProvisionEndpoint: ep, Params: pl.GetParams()})
		if err == nil && resp.GetError() != "" {
			err = fmt.Errorf("%s", resp.GetError())
		}
		if err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("environment %s: start worker at pool %s: %w", envID, addr, err)
		}
		s.awaitConnect(w, "EXTERNAL environment "+envID+" (worker pool "+addr+")")
		stop = func() {
			w.stop()
			sctx, cancel := context.WithTimeout(context.Background(), 5e9)
			defer cancel()
			_, _ = pool.StopWorker(sctx, &fnpb.StopWorkerRequest{WorkerId: id})
			conn.Close()
		}
		return w, stop, nil
	case URNEnvProcess:
		var pl pipepb.ProcessPayload
		if err := proto.Unmarshal(env.GetPayload(), &pl); err != nil {
			return nil, nil, fmt.Errorf("environment %s: bad process payload: %w", envID, err)
		}
		cmd := exec.Command(pl.GetCommand(), "--id="+id,
			"--control_endpoint="+ep.GetUrl(), "--logging_endpoint="+ep.GetUrl(),
			"--artifact_endpoint="+ep.GetUrl(), "--provision_endpoint="+ep.GetUrl())
		cmd.Env = os.Environ()
		for k, v := range pl.GetEnv() {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			return nil, nil, fmt.Errorf("environment %s: start %s: %w", envID, pl.GetCommand(), err)
		}
		s.awaitConnect(w, "PROCESS environment "+envID+" ("+pl.GetCommand()+")")
		exited := make(chan struct{})
		go func() {
			err := cmd.Wait()
			w.lose(fmt.Errorf("%w: %s: process exited: %v", ErrWorkerLost, id, err))
			close(exited)
		}()
		go func() {
			select {
			case <-w.done:
				// Lost (a stream ended, it never connected) or stopped: the
				// runner has given its bundles to another worker, and this
				// one must not run on beside it, holding memory and perhaps
				// doing a lost bundle's side effects a second time.
				_ = cmd.Process.Kill()
			case <-exited:
			}
		}()
		stop = func() {
			w.stop()
			_ = cmd.Process.Kill()
			<-exited
		}
		return w, stop, nil
	}
	return nil, nil, SupportedEnvironment(env)
}
