package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/joboptions"
)

// Artifact URNs from beam_runner_api.proto's StandardArtifacts.
const (
	urnArtifactFile  = "beam:artifact:type:file:v1"
	urnArtifactURL   = "beam:artifact:type:url:v1"
	urnRoleStagingTo = "beam:artifact:role:staging_to:v1"
	urnRoleGoWorker  = "beam:artifact:role:go_worker_binary:v1"
)

// artifactChunk is the size of the chunks GetArtifact sends, well below
// gRPC's default 4 MiB message limit on the receiving side.
const artifactChunk = 1 << 20

// ErrUnsafeArtifactPath is returned for an artifact name or path that would
// leave its job's staging directory.
var ErrUnsafeArtifactPath = errors.New("weir: artifact path leaves the staging directory")

// errBadArtifact marks malformed artifact descriptions or contents from an
// SDK, reported as InvalidArgument.
var errBadArtifact = errors.New("weir: bad artifact")

// stagingPhase is where a preparation is in artifact staging.
type stagingPhase int

const (
	stagingIdle   stagingPhase = iota // nothing staged yet
	stagingActive                     // a staging stream is running
	stagingDone                       // staged; Run may claim it
	stagingFailed                     // the last attempt failed; the SDK may retry
	stagingClosed                     // claimed by Run or forgotten: no more staging
)

// preparation is a job between Prepare and Run. The fields outside mu never
// change.
type preparation struct {
	id, name, token string
	pipeline        *pipepb.Pipeline
	options         *structpb.Struct
	opts            *joboptions.Options // options, parsed at Prepare
	created         time.Time

	mu struct {
		sync.Mutex
		phase stagingPhase
		// done is closed when the active staging attempt ends.
		done      chan struct{}
		err       error // of the last failed attempt
		staged    int64 // bytes of the staged attempt, in the server's budget
		dir       string
		artifacts map[string][]*pipepb.ArtifactInformation
	}
}

// begin starts a staging attempt. already reports that staging succeeded
// before (an SDK retrying after a lost response), so there is nothing to do;
// old is the directory of a failed attempt, to remove.
func (p *preparation) begin() (old string, already bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.mu.phase {
	case stagingActive:
		return "", false, status.Errorf(codes.FailedPrecondition, "weir: job %s: artifacts are already being staged", p.id)
	case stagingDone:
		return "", true, nil
	case stagingClosed:
		return "", false, status.Errorf(codes.FailedPrecondition, "weir: job %s: already submitted or expired", p.id)
	}
	old, p.mu.dir = p.mu.dir, ""
	p.mu.phase = stagingActive
	p.mu.done = make(chan struct{})
	return old, false, nil
}

// end records the outcome of the active staging attempt.
func (p *preparation) end(dir string, artifacts map[string][]*pipepb.ArtifactInformation, staged int64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.dir, p.mu.staged = dir, staged
	if err != nil {
		p.mu.phase, p.mu.err = stagingFailed, err
	} else {
		p.mu.phase, p.mu.err, p.mu.artifacts = stagingDone, nil, artifacts
	}
	close(p.mu.done)
}

// claim waits until no staging attempt is running, then hands the staged
// artifacts to Run and closes the preparation to further staging. A pipeline
// without dependencies needs no staging, since some SDKs skip it then.
func (p *preparation) claim(ctx context.Context) (dir string, artifacts map[string][]*pipepb.ArtifactInformation, err error) {
	for {
		p.mu.Lock()
		phase, done := p.mu.phase, p.mu.done
		switch phase {
		case stagingDone:
			p.mu.phase = stagingClosed
			dir, artifacts = p.mu.dir, p.mu.artifacts
			p.mu.Unlock()
			return dir, artifacts, nil
		case stagingIdle:
			if hasDependencies(p.pipeline) {
				p.mu.Unlock()
				return "", nil, status.Error(codes.FailedPrecondition, "artifacts were not staged: stage them with the token from Prepare before Run")
			}
			p.mu.phase = stagingClosed
			p.mu.Unlock()
			return "", map[string][]*pipepb.ArtifactInformation{}, nil
		case stagingFailed:
			err := p.mu.err
			p.mu.Unlock()
			return "", nil, status.Errorf(codes.FailedPrecondition, "artifact staging failed: %v", err)
		case stagingClosed:
			p.mu.Unlock()
			return "", nil, status.Error(codes.AlreadyExists, "preparation already submitted")
		}
		p.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return "", nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}

// takeStaged hands over the bytes counted for p's staged artifacts, to
// give back to the server's budget or pass to the job.
func (p *preparation) takeStaged() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.mu.staged
	p.mu.staged = 0
	return n
}

// close ends the preparation unless it is being staged, returning its
// staging directory for removal.
func (p *preparation) close() (dir string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.mu.phase {
	case stagingActive:
		return "", false
	case stagingClosed:
		return "", true
	}
	p.mu.phase = stagingClosed
	dir, p.mu.dir = p.mu.dir, ""
	return dir, true
}

func hasDependencies(p *pipepb.Pipeline) bool {
	for _, env := range p.GetComponents().GetEnvironments() {
		if len(env.GetDependencies()) > 0 {
			return true
		}
	}
	return false
}

// stagingRoot returns the directory holding every job's staging directory,
// creating it on first use.
func (s *Server) stagingRoot() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.stagingRoot != "" {
		return s.mu.stagingRoot, nil
	}
	if s.mu.closed {
		return "", ErrServerClosed
	}
	if s.opts.StagingRoot == "" {
		dir, err := os.MkdirTemp("", "weir-staging-")
		if err != nil {
			return "", fmt.Errorf("weir: creating staging root: %w", err)
		}
		s.mu.stagingRoot, s.mu.ownsRoot = dir, true
		return dir, nil
	}
	dir, err := filepath.Abs(s.opts.StagingRoot)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return "", fmt.Errorf("weir: creating staging root %s: %w", s.opts.StagingRoot, err)
	}
	s.mu.stagingRoot = dir
	return dir, nil
}

func (s *Server) prepByToken(token string) *preparation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.byToken[token]
}

// artifactStaging serves Beam's ArtifactStagingService for a Server.
type artifactStaging struct {
	jobpb.UnimplementedArtifactStagingServiceServer
	s *Server
}

// ReverseArtifactRetrievalService stages a preparation's artifacts. The SDK
// opens the stream and sends its staging token; from then on the runner
// asks and the SDK answers: per environment one ResolveArtifacts, then one
// GetArtifact per resolved artifact, whose chunks end with is_last. The
// runner ends the stream when everything is staged, which the SDK takes as
// success.
func (a *artifactStaging) ReverseArtifactRetrievalService(stream jobpb.ArtifactStagingService_ReverseArtifactRetrievalServiceServer) error {
	first, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return status.Error(codes.InvalidArgument, "weir: artifact staging: stream ended before the staging token")
	}
	if err != nil {
		return fmt.Errorf("weir: artifact staging: %w", err)
	}
	token := first.GetStagingToken()
	if token == "" {
		return status.Error(codes.InvalidArgument, "weir: artifact staging: first message has no staging token")
	}
	p := a.s.prepByToken(token)
	if p == nil {
		return status.Error(codes.NotFound, "weir: artifact staging: unknown staging token (job already submitted, expired, or never prepared)")
	}
	old, already, err := p.begin()
	if err != nil || already {
		return err
	}
	if old != "" {
		os.RemoveAll(old)
	}

	var staged int64
	dir, artifacts, err := a.s.stage(&meteredStream{artifactStream: stream, s: a.s, staged: &staged}, p)
	if err != nil {
		if dir != "" {
			os.RemoveAll(dir)
			dir = ""
		}
		a.s.budget.releaseStaged(staged)
		staged = 0
	}
	p.end(dir, artifacts, staged, err)
	if err != nil {
		a.s.opts.Logger.Warn("weir: artifact staging failed", "preparation", p.id, "err", err)
		return stagingStatus(err)
	}
	a.s.opts.Logger.Debug("weir: artifacts staged", "preparation", p.id, "dir", dir)
	return nil
}

// stagingStatus gives a staging error its gRPC code: the SDK's fault is
// InvalidArgument; stream errors keep their own code.
func stagingStatus(err error) error {
	if le := (*LimitError)(nil); errors.As(err, &le) {
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	if errors.Is(err, errBadArtifact) || errors.Is(err, ErrUnsafeArtifactPath) {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return err
}

// stage fetches every environment's artifacts into a new staging directory
// for p.
func (s *Server) stage(stream artifactStream, p *preparation) (string, map[string][]*pipepb.ArtifactInformation, error) {
	root, err := s.stagingRoot()
	if err != nil {
		return "", nil, fmt.Errorf("weir: staging job %s: %w", p.id, err)
	}
	dir, err := os.MkdirTemp(root, p.id+"-")
	if err != nil {
		return "", nil, fmt.Errorf("weir: staging job %s: %w", p.id, err)
	}
	artifacts, err := stageEnvironments(stream, p.pipeline, dir, openArtifactCache(root))
	if err != nil {
		return dir, nil, fmt.Errorf("weir: staging job %s: %w", p.id, err)
	}
	return dir, artifacts, nil
}

// artifactStream is the runner's side of the reverse retrieval protocol.
type artifactStream interface {
	Send(*jobpb.ArtifactRequestWrapper) error
	Recv() (*jobpb.ArtifactResponseWrapper, error)
}

// stageEnvironments stages each environment's dependencies under
// dir/env<n>/<i>/<name>, where n numbers the environments in ID order and i
// the resolved artifacts; one directory per artifact keeps equal names
// apart. Environment IDs come from the SDK and never become paths. An
// artifact whose declared checksum is in cache (staged before, by this job
// or another) is linked from there instead of fetched; cache may be nil.
func stageEnvironments(stream artifactStream, p *pipepb.Pipeline, dir string, cache *artifactCache) (map[string][]*pipepb.ArtifactInformation, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()

	envs := p.GetComponents().GetEnvironments()
	artifacts := make(map[string][]*pipepb.ArtifactInformation, len(envs))
	for n, envID := range slices.Sorted(maps.Keys(envs)) {
		deps := envs[envID].GetDependencies()
		if len(deps) == 0 {
			continue
		}
		resolved, err := resolveArtifacts(stream, deps)
		if err != nil {
			return nil, fmt.Errorf("environment %q: %w", envID, err)
		}
		// Check every name before fetching anything.
		names := make([]string, len(resolved))
		for i, dep := range resolved {
			if names[i], err = stagedName(dep); err != nil {
				return nil, fmt.Errorf("environment %q artifact %d: %w", envID, i, err)
			}
		}
		for i, dep := range resolved {
			rel := filepath.Join("env"+strconv.Itoa(n), strconv.Itoa(i), names[i])
			info, err := fetchArtifact(stream, root, dir, rel, dep, cache)
			if err != nil {
				return nil, fmt.Errorf("environment %q artifact %d (%s): %w", envID, i, names[i], err)
			}
			artifacts[envID] = append(artifacts[envID], info)
		}
	}
	return artifacts, nil
}

func resolveArtifacts(stream artifactStream, deps []*pipepb.ArtifactInformation) ([]*pipepb.ArtifactInformation, error) {
	err := stream.Send(&jobpb.ArtifactRequestWrapper{
		Request: &jobpb.ArtifactRequestWrapper_ResolveArtifact{
			ResolveArtifact: &jobpb.ResolveArtifactsRequest{
				Artifacts:     deps,
				PreferredUrns: []string{urnArtifactFile},
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("requesting resolution: %w", err)
	}
	resp, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("SDK ended the stream instead of resolving artifacts")
	}
	if err != nil {
		return nil, fmt.Errorf("receiving resolution: %w", err)
	}
	r := resp.GetResolveArtifactResponse()
	if r == nil {
		return nil, fmt.Errorf("%w: expected a ResolveArtifactsResponse, got %T", errBadArtifact, resp.GetResponse())
	}
	return r.GetReplacements(), nil
}

// stagedName is the file name an artifact is staged under: the SDK's staged
// name when it gives one, else the base name of its file path or URL. A
// staged name is a relative path chosen by the SDK, so it is refused unless
// it stays inside the directory.
func stagedName(dep *pipepb.ArtifactInformation) (string, error) {
	if dep.GetRoleUrn() == urnRoleStagingTo {
		var rp pipepb.ArtifactStagingToRolePayload
		if err := proto.Unmarshal(dep.GetRolePayload(), &rp); err != nil {
			return "", fmt.Errorf("%w: staging_to role payload: %v", errBadArtifact, err)
		}
		name := rp.GetStagedName()
		if name == "" {
			return "", fmt.Errorf("%w: empty staged name", errBadArtifact)
		}
		// Staged names are slash-separated, whatever the SDK's OS.
		local := filepath.FromSlash(name)
		if !filepath.IsLocal(local) || filepath.Clean(local) == "." {
			return "", fmt.Errorf("%w: staged name %q", ErrUnsafeArtifactPath, name)
		}
		return local, nil
	}
	var base string
	switch dep.GetTypeUrn() {
	case urnArtifactFile:
		var fp pipepb.ArtifactFilePayload
		if err := proto.Unmarshal(dep.GetTypePayload(), &fp); err != nil {
			return "", fmt.Errorf("%w: file payload: %v", errBadArtifact, err)
		}
		base = path.Base(filepath.ToSlash(fp.GetPath()))
	case urnArtifactURL:
		var up pipepb.ArtifactUrlPayload
		if err := proto.Unmarshal(dep.GetTypePayload(), &up); err != nil {
			return "", fmt.Errorf("%w: url payload: %v", errBadArtifact, err)
		}
		if u, err := url.Parse(up.GetUrl()); err == nil {
			base = path.Base(u.Path)
		}
	}
	// A base name has no separator, so only ".", ".." and "/" are unusable;
	// the SDK's own path never decides where the file lands.
	if base == "" || base == "." || base == ".." || base == "/" {
		base = "artifact"
	}
	return base, nil
}

// expectedSHA256 returns the checksum an SDK declared for an artifact, if any.
func expectedSHA256(dep *pipepb.ArtifactInformation) (string, error) {
	switch dep.GetTypeUrn() {
	case urnArtifactFile:
		var fp pipepb.ArtifactFilePayload
		if err := proto.Unmarshal(dep.GetTypePayload(), &fp); err != nil {
			return "", fmt.Errorf("%w: file payload: %v", errBadArtifact, err)
		}
		return fp.GetSha256(), nil
	case urnArtifactURL:
		var up pipepb.ArtifactUrlPayload
		if err := proto.Unmarshal(dep.GetTypePayload(), &up); err != nil {
			return "", fmt.Errorf("%w: url payload: %v", errBadArtifact, err)
		}
		return up.GetSha256(), nil
	}
	return "", nil
}

// fetchArtifact writes one artifact to rel under root, from cache when it
// holds the checksum the SDK declared, else asked of the SDK (and then
// added to cache), and returns it as a FILE artifact with the same role.
func fetchArtifact(stream artifactStream, root *os.Root, dir, rel string, dep *pipepb.ArtifactInformation, cache *artifactCache) (*pipepb.ArtifactInformation, error) {
	want, err := expectedSHA256(dep)
	if err != nil {
		return nil, err
	}
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return nil, err
	}
	perm := fs.FileMode(0o644)
	if dep.GetRoleUrn() == urnRoleGoWorker {
		perm = 0o755 // a PROCESS environment may run it from here
	}
	sum := want
	if !cache.link(want, filepath.Join(dir, rel), perm) {
		f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return nil, err
		}
		sum, err = receiveArtifact(stream, f, dep)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		if want != "" && sum != want {
			return nil, fmt.Errorf("%w: received content has sha256 %s, SDK declared %s", errBadArtifact, sum, want)
		}
		cache.add(sum, filepath.Join(dir, rel), perm)
	}
	payload, err := proto.Marshal(&pipepb.ArtifactFilePayload{Path: filepath.Join(dir, rel), Sha256: sum})
	if err != nil {
		return nil, err
	}
	return &pipepb.ArtifactInformation{
		TypeUrn:     urnArtifactFile,
		TypePayload: payload,
		RoleUrn:     dep.GetRoleUrn(),
		RolePayload: dep.GetRolePayload(),
	}, nil
}

// receiveArtifact requests dep and copies its chunks to w until the one
// marked is_last (which may carry data too), returning their sha256.
func receiveArtifact(stream artifactStream, w io.Writer, dep *pipepb.ArtifactInformation) (string, error) {
	err := stream.Send(&jobpb.ArtifactRequestWrapper{
		Request: &jobpb.ArtifactRequestWrapper_GetArtifact{
			GetArtifact: &jobpb.GetArtifactRequest{Artifact: dep},
		},
	})
	if err != nil {
		return "", fmt.Errorf("requesting artifact: %w", err)
	}
	h := sha256.New()
	w = io.MultiWriter(w, h)
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return "", errors.New("SDK ended the stream before the artifact's last chunk")
		}
		if err != nil {
			return "", fmt.Errorf("receiving artifact: %w", err)
		}
		if resp.GetResolveArtifactResponse() != nil {
			return "", fmt.Errorf("%w: got a ResolveArtifactsResponse while fetching an artifact", errBadArtifact)
		}
		if _, err := w.Write(resp.GetGetArtifactResponse().GetData()); err != nil {
			return "", err
		}
		if resp.GetIsLast() {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
	}
}

// ArtifactRetrieval serves one job's staged artifacts to its SDK workers
// (Beam's ArtifactRetrievalService). It only reads FILE artifacts inside the
// job's staging directory, whatever a worker asks for.
type ArtifactRetrieval struct {
	jobpb.UnimplementedArtifactRetrievalServiceServer
	job *Job
}

var (
	_ jobpb.ArtifactStagingServiceServer   = (*artifactStaging)(nil)
	_ jobpb.ArtifactRetrievalServiceServer = (*ArtifactRetrieval)(nil)
)

// NewArtifactRetrieval returns the retrieval service for j's artifacts.
func NewArtifactRetrieval(j *Job) jobpb.ArtifactRetrievalServiceServer {
	return &ArtifactRetrieval{job: j}
}

// ResolveArtifacts returns the artifacts as given: they were resolved when
// they were staged.
func (r *ArtifactRetrieval) ResolveArtifacts(ctx context.Context, req *jobpb.ResolveArtifactsRequest) (*jobpb.ResolveArtifactsResponse, error) {
	return &jobpb.ResolveArtifactsResponse{Replacements: req.GetArtifacts()}, nil
}

// GetArtifact streams a staged FILE artifact in chunks. Workers rewrite the
// role of what they ask for, so only the type and its payload matter.
func (r *ArtifactRetrieval) GetArtifact(req *jobpb.GetArtifactRequest, stream jobpb.ArtifactRetrievalService_GetArtifactServer) error {
	a := req.GetArtifact()
	if a == nil {
		return status.Errorf(codes.InvalidArgument, "weir: job %s: GetArtifact: request has no artifact", r.job.ID)
	}
	if a.GetTypeUrn() != urnArtifactFile {
		return status.Errorf(codes.InvalidArgument, "weir: job %s: GetArtifact: type %q is not served; only FILE artifacts staged by the runner are", r.job.ID, a.GetTypeUrn())
	}
	var fp pipepb.ArtifactFilePayload
	if err := proto.Unmarshal(a.GetTypePayload(), &fp); err != nil {
		return status.Errorf(codes.InvalidArgument, "weir: job %s: GetArtifact: file payload: %v", r.job.ID, err)
	}
	rel, err := r.stagedPath(fp.GetPath())
	if err != nil {
		return status.Errorf(codes.PermissionDenied, "weir: job %s: GetArtifact %q: %v", r.job.ID, fp.GetPath(), err)
	}
	// os.Root also refuses symlinks that lead out of the directory.
	f, err := os.OpenInRoot(r.job.StagingDir, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return status.Errorf(codes.NotFound, "weir: job %s: GetArtifact %q: not staged", r.job.ID, fp.GetPath())
	}
	if err != nil {
		return status.Errorf(codes.PermissionDenied, "weir: job %s: GetArtifact %q: %v", r.job.ID, fp.GetPath(), err)
	}
	defer f.Close()
	for {
		// A fresh buffer per chunk: gRPC may still read a sent message
		// (stats handlers, tracing), so it must not be reused.
		buf := make([]byte, artifactChunk)
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			if serr := stream.Send(&jobpb.GetArtifactResponse{Data: buf[:n]}); serr != nil {
				return fmt.Errorf("weir: job %s: GetArtifact %q: %w", r.job.ID, fp.GetPath(), serr)
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return status.Errorf(codes.Internal, "weir: job %s: GetArtifact %q: %v", r.job.ID, fp.GetPath(), err)
		}
	}
}

// stagedPath returns p relative to the job's staging directory, or an error
// if p is not inside it.
func (r *ArtifactRetrieval) stagedPath(p string) (string, error) {
	if r.job.StagingDir == "" {
		return "", errors.New("job has no staged artifacts")
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: not an absolute path", ErrUnsafeArtifactPath)
	}
	rel, err := filepath.Rel(r.job.StagingDir, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", ErrUnsafeArtifactPath
	}
	return rel, nil
}
