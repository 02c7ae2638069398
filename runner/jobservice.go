package runner

// Beam's JobService (jobpb.JobServiceServer) as the Server answers it:
// preparing and running jobs, their states, messages and metrics, cancel
// and drain. The server's own life (listening, stopping, staging) is in
// server.go.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/weir-runner/weir/joboptions"
)

// Prepare stores a pipeline for a later Run and hands out a staging token.
// The preparation ID becomes the job ID.
func (s *Server) Prepare(ctx context.Context, req *jobpb.PrepareJobRequest) (*jobpb.PrepareJobResponse, error) {
	if req.GetPipeline() == nil {
		return nil, status.Errorf(codes.InvalidArgument, "weir: Prepare job %q: request has no pipeline", req.GetJobName())
	}
	// The options are read here, once, so that a bad one fails the
	// submission before any artifact is staged.
	opts, err := joboptions.Parse(req.GetPipelineOptions())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "weir: Prepare job %q: %v", req.GetJobName(), err)
	}
	now := time.Now()
	name := jobName(req.GetJobName(), opts, now)
	if err := s.opts.checkSubmission(req.GetPipeline(), opts, s.opts.StateDir); err != nil {
		return nil, status.Errorf(codes.PermissionDenied, "weir: Prepare job %q: %v", name, err)
	}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil, status.Errorf(codes.Unavailable, "weir: Prepare job %q: %v", name, ErrServerClosed)
	}
	expired := s.pruneLocked(now)
	s.pruneJobsLocked()
	s.mu.nextID++
	p := &preparation{
		id:       fmt.Sprintf("%s-%d", idPrefix(name), s.mu.nextID),
		name:     name,
		pipeline: req.GetPipeline(),
		options:  req.GetPipelineOptions(),
		opts:     opts,
		token:    rand.Text(),
		created:  now,
	}
	if p.options == nil {
		p.options = &structpb.Struct{}
	}
	s.mu.preps[p.id] = p
	s.mu.byToken[p.token] = p
	endpoint := s.mu.endpoint
	s.mu.Unlock()
	// The address this client reached us at is the one it can reach the
	// staging service at, even when the server listens on all interfaces.
	if pr, ok := peer.FromContext(ctx); ok && pr.LocalAddr != nil && pr.LocalAddr.Network() == "tcp" {
		endpoint = advertisedAddr(pr.LocalAddr)
	}

	for _, dir := range expired {
		os.RemoveAll(dir)
	}
	s.opts.Logger.Debug("weir: job prepared", "preparation", p.id, "name", p.name)
	return &jobpb.PrepareJobResponse{
		PreparationId:           p.id,
		ArtifactStagingEndpoint: &pipepb.ApiServiceDescriptor{Url: endpoint},
		StagingSessionToken:     p.token,
	}, nil
}

// pythonJobName is the job name Python's PortableRunner sends in every
// PrepareJobRequest, whatever --job_name says: it names no job.
const pythonJobName = "job"

// jobName names a job: by its job_name option when it has one (the SDKs'
// --job_name), else by the name in its PrepareJobRequest (the Go SDK sends
// its job name there), unless that is empty or Python's constant "job".
// A job's name keys its folder under the state dir (checkpoints, the
// submission record), so a job submitted again under its name resumes from
// its checkpoints; two unnamed jobs must never share one, nor find a
// previous server's. A job with no name of its own is therefore given one
// that no other job has, as the Go SDK names its unnamed jobs: "job-", the
// time of submission and a random suffix. Resubmitting with that name as
// --job_name resumes it.
func jobName(requested string, o *joboptions.Options, now time.Time) string {
	switch {
	case o.JobName != "":
		return o.JobName
	case requested != "" && requested != pythonJobName:
		return requested
	}
	return fmt.Sprintf("job-%s-%s", now.UTC().Format("20060102-150405"), strings.ToLower(rand.Text()[:6]))
}

// pruneLocked forgets preparations older than the TTL that are not being
// staged, and returns their staging directories for removal.
func (s *Server) pruneLocked(now time.Time) (dirs []string) {
	for id, p := range s.mu.preps {
		if now.Sub(p.created) < s.opts.PreparationTTL {
			continue
		}
		dir, ok := p.close()
		if !ok {
			continue
		}
		s.budget.releaseStaged(p.takeStaged())
		delete(s.mu.preps, id)
		delete(s.mu.byToken, p.token)
		if dir != "" {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// idPrefix turns a job name into something safe in IDs, paths and URLs.
func idPrefix(name string) string {
	const maxLen = 48
	var b strings.Builder
	for _, r := range name {
		if b.Len() >= maxLen {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	p := strings.Trim(b.String(), ".-")
	if p == "" {
		return "job"
	}
	return p
}

// Run starts a prepared job, once its artifacts are staged.
func (s *Server) Run(ctx context.Context, req *jobpb.RunJobRequest) (*jobpb.RunJobResponse, error) {
	id := req.GetPreparationId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "weir: Run: request has no preparation id")
	}
	s.mu.Lock()
	p, ran := s.mu.preps[id], s.mu.jobs[JobID(id)] != nil
	s.mu.Unlock()
	if ran {
		return nil, status.Errorf(codes.AlreadyExists, "weir: Run: preparation %q already runs as job %q", id, id)
	}
	if p == nil {
		return nil, status.Errorf(codes.NotFound, "weir: Run: unknown preparation %q", id)
	}
	if err := s.budget.acquireJob(s.opts.MaxConcurrentJobs, false); err != nil {
		return nil, status.Errorf(codes.ResourceExhausted, "weir: Run %q: %v", id, err)
	}
	dir, artifacts, err := p.claim(ctx)
	if err != nil {
		s.budget.releaseJob()
		st := status.Convert(err)
		return nil, status.Errorf(st.Code(), "weir: Run %q: %s", id, st.Message())
	}

	j := NewJob(JobID(id), p.name, p.pipeline, p.options).withOptions(p.opts)
	j.StagingDir, j.Artifacts = dir, artifacts
	j.stagedBytes, j.slot = p.takeStaged(), true
	s.mu.Lock()
	delete(s.mu.preps, id)
	delete(s.mu.byToken, p.token)
	s.mu.Unlock()
	s.recordJobIfResumable(j)
	if err := s.startJob(j); err != nil {
		if dir != "" {
			os.RemoveAll(dir)
		}
		s.dropRecord(j)
		s.releaseBudget(j)
		return nil, status.Errorf(codes.Unavailable, "weir: Run %q: %v", id, err)
	}
	return &jobpb.RunJobResponse{JobId: string(j.ID)}, nil
}

// startJob registers j and runs it in its own goroutine.
func (s *Server) startJob(j *Job) error {
	jobCtx, cancel := context.WithCancelCause(context.Background())
	j.cancel = func() { cancel(errCancelRequested) }
	j.log = jobLogger(s.opts.Logger, j)
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		cancel(ErrServerClosed)
		return ErrServerClosed
	}
	// Only now, so a job the closing server refused is not logged as
	// submitted.
	j.SetState(jobpb.JobState_STARTING)
	s.mu.jobs[j.ID] = j
	s.mu.order = append(s.mu.order, j.ID)
	s.running.Add(1)
	s.mu.Unlock()
	go s.runJob(jobCtx, cancel, j)
	return nil
}

// runJob drives one job from RUNNING to a terminal state; see the package
// documentation for the rules.
func (s *Server) runJob(ctx context.Context, cancel context.CancelCauseFunc, j *Job) {
	defer s.running.Done()
	defer cancel(nil)
	log := j.Logger()

	// Under mu, so a Cancel that already moved the job to CANCELLING is not
	// overwritten by RUNNING.
	s.mu.Lock()
	if ctx.Err() == nil && !j.draining() {
		j.SetState(jobpb.JobState_RUNNING)
	}
	s.mu.Unlock()

	err := safeExecute(ctx, s.exec, j)

	// Clean up before the terminal state is visible, so whoever sees it
	// finds the job's resources gone.
	if !s.opts.KeepArtifacts && j.StagingDir != "" && !j.resumed {
		if rerr := os.RemoveAll(j.StagingDir); rerr != nil {
			log.Warn("weir: removing job staging directory", "dir", j.StagingDir, "err", rerr)
		}
	}
	s.dropRecord(j)
	s.releaseBudget(j)
	switch {
	case err == nil && j.draining():
		j.SetState(jobpb.JobState_DRAINED)
	case err == nil:
		j.SetState(jobpb.JobState_DONE)
	case errors.Is(context.Cause(ctx), errCancelRequested):
		j.SetState(jobpb.JobState_CANCELLED)
	default:
		j.Fail(fmt.Errorf("job %s: %w", j.ID, err))
	}
}

// safeExecute runs the executor, turning a panic into the job's error so one
// bad job cannot take down the server and every other job.
func safeExecute(ctx context.Context, exec Executor, j *Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("executor panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return exec.Execute(ctx, j)
}

// lookup finds the job named in a request.
func (s *Server) lookup(method, id string) (*Job, error) {
	if id == "" {
		return nil, status.Errorf(codes.InvalidArgument, "weir: %s: request has no job id", method)
	}
	if j := s.Job(JobID(id)); j != nil {
		return j, nil
	}
	s.mu.Lock()
	_, prepared := s.mu.preps[id]
	s.mu.Unlock()
	if prepared {
		// Python subscribes to the state and message streams with the
		// preparation id before it calls Run, under its job server timeout
		// (--job_server_timeout, 300 s by default), and on an error
		// subscribes with the job id after Run, with no deadline. Serving
		// the first would end every Python job's streams, and so its
		// wait_until_finish, with DEADLINE_EXCEEDED after five minutes. A
		// job keeps its messages from the first, so nothing is lost.
		return nil, status.Errorf(codes.NotFound, "weir: %s: %q is a preparation that has not run: use the job id Run returns", method, id)
	}
	return nil, status.Errorf(codes.NotFound, "weir: %s: unknown job %q", method, id)
}

// GetJobs lists every submitted job, oldest first.
func (s *Server) GetJobs(ctx context.Context, req *jobpb.GetJobsRequest) (*jobpb.GetJobsResponse, error) {
	resp := &jobpb.GetJobsResponse{}
	for _, j := range s.Jobs() {
		st, _ := j.State()
		resp.JobInfo = append(resp.JobInfo, &jobpb.JobInfo{
			JobId:           string(j.ID),
			JobName:         j.Name,
			PipelineOptions: j.Options,
			State:           st,
		})
	}
	return resp, nil
}

// GetState returns a job's current state.
func (s *Server) GetState(ctx context.Context, req *jobpb.GetJobStateRequest) (*jobpb.JobStateEvent, error) {
	j, err := s.lookup("GetState", req.GetJobId())
	if err != nil {
		return nil, err
	}
	st, at := j.State()
	return &jobpb.JobStateEvent{State: st, Timestamp: timestamppb.New(at)}, nil
}

// GetPipeline returns the pipeline a job was submitted with.
func (s *Server) GetPipeline(ctx context.Context, req *jobpb.GetJobPipelineRequest) (*jobpb.GetJobPipelineResponse, error) {
	j, err := s.lookup("GetPipeline", req.GetJobId())
	if err != nil {
		return nil, err
	}
	return &jobpb.GetJobPipelineResponse{Pipeline: j.Pipeline}, nil
}

// Cancel asks a job to stop. It returns at once with the job's state, usually
// CANCELLING; the job becomes CANCELLED when its executor returns.
func (s *Server) Cancel(ctx context.Context, req *jobpb.CancelJobRequest) (*jobpb.CancelJobResponse, error) {
	j, err := s.lookup("Cancel", req.GetJobId())
	if err != nil {
		return nil, err
	}
	s.cancelJob(j)
	st, _ := j.State()
	return &jobpb.CancelJobResponse{State: st}, nil
}

func (s *Server) cancelJob(j *Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, _ := j.State(); IsTerminal(st) {
		return
	}
	j.SetState(jobpb.JobState_CANCELLING)
	j.cancel()
}

// Drain asks a job to finish early without losing data: its SDFs' restrictions
// are truncated, the watermark reaches the end of time, every window fires,
// and the job ends DRAINED.
func (s *Server) Drain(ctx context.Context, req *jobpb.DrainJobRequest) (*jobpb.DrainJobResponse, error) {
	j, err := s.lookup("Drain", req.GetJobId())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if st, _ := j.State(); !IsTerminal(st) && st != jobpb.JobState_CANCELLING {
		j.SetState(jobpb.JobState_DRAINING)
		j.RequestDrain()
	}
	s.mu.Unlock()
	st, _ := j.State()
	return &jobpb.DrainJobResponse{State: st}, nil
}

// GetJobMetrics returns the metrics the job's bundles have reported so far.
func (s *Server) GetJobMetrics(ctx context.Context, req *jobpb.GetJobMetricsRequest) (*jobpb.GetJobMetricsResponse, error) {
	j, err := s.lookup("GetJobMetrics", req.GetJobId())
	if err != nil {
		return nil, err
	}
	return &jobpb.GetJobMetricsResponse{Metrics: j.Metrics.Results()}, nil
}

// DescribePipelineOptions lists weir's job options (joboptions.Describe).
// Python's PortableRunner adds them to its argument parser; it drops any
// flag the runner does not describe.
func (s *Server) DescribePipelineOptions(ctx context.Context, req *jobpb.DescribePipelineOptionsRequest) (*jobpb.DescribePipelineOptionsResponse, error) {
	return &jobpb.DescribePipelineOptionsResponse{Options: joboptions.Describe()}, nil
}

// GetStateStream sends the job's current state, then every change, and ends
// after the terminal state.
func (s *Server) GetStateStream(req *jobpb.GetJobStateRequest, stream jobpb.JobService_GetStateStreamServer) error {
	j, err := s.lookup("GetStateStream", req.GetJobId())
	if err != nil {
		return err
	}
	// Skipping every message: only the state and the wake-up matter here.
	return follow(stream.Context(), j, math.MaxInt, func(_ []*jobpb.JobMessage, st *jobpb.JobStateEvent) error {
		if st == nil {
			return nil
		}
		if err := stream.Send(st); err != nil {
			return fmt.Errorf("weir: GetStateStream %s: %w", j.ID, err)
		}
		return nil
	})
}

// GetMessageStream sends the job's messages (from the first one kept) and its
// state changes, in the order they happened as far as one snapshot shows:
// messages first, then the state. It ends after the terminal state, so the
// error message of a failed job always precedes FAILED, as the Go SDK
// expects.
func (s *Server) GetMessageStream(req *jobpb.JobMessagesRequest, stream jobpb.JobService_GetMessageStreamServer) error {
	j, err := s.lookup("GetMessageStream", req.GetJobId())
	if err != nil {
		return err
	}
	return follow(stream.Context(), j, 0, func(msgs []*jobpb.JobMessage, st *jobpb.JobStateEvent) error {
		for _, m := range msgs {
			if err := stream.Send(&jobpb.JobMessagesResponse{
				Response: &jobpb.JobMessagesResponse_MessageResponse{MessageResponse: m},
			}); err != nil {
				return fmt.Errorf("weir: GetMessageStream %s: %w", j.ID, err)
			}
		}
		if st == nil {
			return nil
		}
		if err := stream.Send(&jobpb.JobMessagesResponse{
			Response: &jobpb.JobMessagesResponse_StateResponse{StateResponse: st},
		}); err != nil {
			return fmt.Errorf("weir: GetMessageStream %s: %w", j.ID, err)
		}
		return nil
	})
}

// follow hands send each snapshot of j's updates, from message skip on: the
// messages new since the last, and the state when it changed (else nil).
// It returns after the terminal state is sent, or when ctx ends.
func follow(ctx context.Context, j *Job, skip int, send func([]*jobpb.JobMessage, *jobpb.JobStateEvent) error) error {
	last := jobpb.JobState_UNSPECIFIED
	for {
		msgs, st, changed := j.Updates(skip)
		var ev *jobpb.JobStateEvent
		if st != last {
			ev, last = stateEvent(j, st), st
		}
		if err := send(msgs, ev); err != nil {
			return err
		}
		skip = nextSkip(skip, msgs)
		if IsTerminal(st) {
			return nil
		}
		if err := waitChange(ctx, changed); err != nil {
			return err
		}
	}
}

// nextSkip returns how many messages have been seen after msgs. A job drops
// its oldest messages past a bound, so counting what was sent would fall
// behind; the message ID is the message's 1-based sequence number.
func nextSkip(skip int, msgs []*jobpb.JobMessage) int {
	if len(msgs) == 0 {
		return skip
	}
	if n, err := strconv.Atoi(msgs[len(msgs)-1].GetMessageId()); err == nil && n > skip {
		return n
	}
	return skip + len(msgs)
}

func stateEvent(j *Job, st jobpb.JobState_Enum) *jobpb.JobStateEvent {
	at := time.Now()
	// The state may have moved on since the snapshot; its time then is
	// unknown, and now is the best bound.
	if cur, t := j.State(); cur == st {
		at = t
	}
	return &jobpb.JobStateEvent{State: st, Timestamp: timestamppb.New(at)}
}

func waitChange(ctx context.Context, changed <-chan struct{}) error {
	select {
	case <-changed:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}
