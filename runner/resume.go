package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/joboptions"
)

// weir serve keeps a record of each running job it can resume (the
// submission: pipeline, options, staged artifacts) under
// <state dir>/jobs/<job name>/submission, and removes it when the job
// ends. A record left behind means the server stopped (or died) with the
// job unfinished; ResumeJobs starts such jobs again, and each resumes from
// its own checkpoints, as a job submitted again under its name does.
// Flink's HA job store plays this part there.

// Files of a submission record.
const (
	recordFolder    = "submission"
	recordJob       = "job.pb"       // a PrepareJobRequest: pipeline, options, name
	recordArtifacts = "artifacts.pb" // Components whose environments list the dependencies
	recordFiles     = "artifacts"    // the staged files
)

// resumable says whether a job can be resumed after a restart of the
// server, and if not, why.
func resumable(j *Job) (bool, string) {
	switch {
	case j.Name == "":
		return false, "it has no name"
	}
	if o, err := j.JobOptions(); err != nil || o.CheckpointInterval == 0 {
		return false, "it takes no checkpoints"
	}
	for id, env := range j.Pipeline.GetComponents().GetEnvironments() {
		if env.GetUrn() == fnapi.URNEnvExternal {
			return false, fmt.Sprintf("the workers of environment %s run in its submitter (LOOPBACK or EXTERNAL)", id)
		}
	}
	return true, ""
}

func (s *Server) recordDir(name string) string {
	return filepath.Join(s.opts.StateDir, "jobs", safeName(name), recordFolder)
}

// saveRecord writes the job's submission record: into a .tmp folder, then
// renamed, so a record is whole or absent. Staged files are hard-linked
// where the file system allows, copied otherwise.
func (s *Server) saveRecord(j *Job) error {
	dir := s.recordDir(j.Name)
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(tmp, recordFiles), 0o755); err != nil {
		return err
	}
	arts := &pipepb.Components{Environments: map[string]*pipepb.Environment{}}
	for env, deps := range j.Artifacts {
		e := &pipepb.Environment{}
		for _, a := range deps {
			moved, err := keepArtifact(a, j.StagingDir, filepath.Join(tmp, recordFiles), filepath.Join(dir, recordFiles))
			if err != nil {
				os.RemoveAll(tmp)
				return fmt.Errorf("environment %s: %w", env, err)
			}
			e.Dependencies = append(e.Dependencies, moved)
		}
		arts.Environments[env] = e
	}
	for name, m := range map[string]proto.Message{
		recordJob:       &jobpb.PrepareJobRequest{Pipeline: j.Pipeline, PipelineOptions: j.Options, JobName: j.Name},
		recordArtifacts: arts,
	} {
		b, err := proto.Marshal(m)
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, name), b, 0o644)
		}
		if err != nil {
			os.RemoveAll(tmp)
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// keepArtifact puts a staged FILE artifact under files (the record's
// folder while it is written) and returns it pointing to where it will be
// under final. Other artifacts are kept as they are.
func keepArtifact(a *pipepb.ArtifactInformation, stagingDir, files, final string) (*pipepb.ArtifactInformation, error) {
	if a.GetTypeUrn() != urnArtifactFile || stagingDir == "" {
		return a, nil
	}
	var fp pipepb.ArtifactFilePayload
	if err := proto.Unmarshal(a.GetTypePayload(), &fp); err != nil {
		return nil, fmt.Errorf("artifact payload: %w", err)
	}
	rel, err := filepath.Rel(stagingDir, fp.GetPath())
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return a, nil // not staged here: it stays where it is
	}
	dst := filepath.Join(files, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, err
	}
	if err := os.Link(fp.GetPath(), dst); err != nil {
		if err := copyFile(fp.GetPath(), dst); err != nil {
			return nil, err
		}
	}
	out := proto.Clone(a).(*pipepb.ArtifactInformation)
	out.TypePayload, err = proto.Marshal(&pipepb.ArtifactFilePayload{Path: filepath.Join(final, rel), Sha256: fp.GetSha256()})
	return out, err
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// recordJobIfResumable saves the job's record when the server keeps
// records and the job can be resumed, and tells the job either way.
func (s *Server) recordJobIfResumable(j *Job) {
	if s.opts.StateDir == "" {
		return
	}
	if ok, why := resumable(j); !ok {
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_DETAILED, "weir serve will not resume this job if it restarts: %s", why)
		return
	}
	if err := s.saveRecord(j); err != nil {
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "weir serve could not record the job to resume it after a restart: %v", err)
		return
	}
	j.recorded = true
}

// dropRecord removes the job's record once it has ended, unless the
// server's own shutdown stopped it: that job is to resume.
func (s *Server) dropRecord(j *Job) {
	if !j.recorded || j.shutdown.Load() {
		return
	}
	if err := os.RemoveAll(s.recordDir(j.Name)); err != nil {
		s.opts.Logger.Warn("weir: removing the job's submission record", "job", j.ID, "err", err)
	}
}

// ResumeJobs starts every job whose submission record a previous server
// left in the state dir, and returns their ids. A record that cannot be
// read is reported and left in place.
func (s *Server) ResumeJobs() ([]JobID, error) {
	if s.opts.StateDir == "" {
		return nil, nil
	}
	names, err := os.ReadDir(filepath.Join(s.opts.StateDir, "jobs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("weir: resume jobs: %w", err)
	}
	var ids []JobID
	var errs []error
	for _, n := range names {
		dir := filepath.Join(s.opts.StateDir, "jobs", n.Name(), recordFolder)
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		req, arts, err := readRecord(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("weir: resume the job in %s: %w", dir, err))
			continue
		}
		id, err := s.resume(req, arts)
		if err != nil {
			errs = append(errs, fmt.Errorf("weir: resume job %s: %w", req.GetJobName(), err))
			continue
		}
		ids = append(ids, id)
	}
	return ids, errors.Join(errs...)
}

// readRecord reads a submission record.
func readRecord(dir string) (*jobpb.PrepareJobRequest, map[string][]*pipepb.ArtifactInformation, error) {
	var req jobpb.PrepareJobRequest
	var arts pipepb.Components
	for name, m := range map[string]proto.Message{recordJob: &req, recordArtifacts: &arts} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			err = proto.Unmarshal(b, m)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if req.GetPipeline() == nil || req.GetJobName() == "" {
		return nil, nil, fmt.Errorf("%s: no pipeline or no name", recordJob)
	}
	deps := map[string][]*pipepb.ArtifactInformation{}
	for env, e := range arts.GetEnvironments() {
		deps[env] = e.GetDependencies()
	}
	return &req, deps, nil
}

// resume starts a recorded job under a new id.
func (s *Server) resume(req *jobpb.PrepareJobRequest, arts map[string][]*pipepb.ArtifactInformation) (JobID, error) {
	opts, err := joboptions.Parse(req.GetPipelineOptions())
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return "", ErrServerClosed
	}
	s.mu.nextID++
	id := JobID(fmt.Sprintf("%s-%d", idPrefix(req.GetJobName()), s.mu.nextID))
	s.mu.Unlock()
	j := NewJob(id, req.GetJobName(), req.GetPipeline(), req.GetPipelineOptions()).withOptions(opts)
	// Its workers fetch the staged files from the record, which the job
	// does not remove as it would a staging folder (see runJob).
	j.StagingDir, j.Artifacts = filepath.Join(s.recordDir(req.GetJobName()), recordFiles), arts
	j.recorded, j.resumed = true, true
	// A resumed job was admitted by the last server: it takes a slot even
	// past --max-concurrent-jobs.
	_ = s.budget.acquireJob(s.opts.MaxConcurrentJobs, true)
	j.slot = true
	j.Logf(jobpb.JobMessage_JOB_MESSAGE_BASIC, "resumed after weir serve restarted: job %s was running when it stopped", j.Name)
	if err := s.startJob(j); err != nil {
		s.releaseBudget(j)
		return "", err
	}
	s.opts.Logger.Info("weir: job resumed", "job", id, "name", j.Name)
	return id, nil
}
