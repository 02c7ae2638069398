package runner

// Confinement: what a job may make the server do on its behalf (issue 19).
// Every field's zero value is unrestricted, which is what the in-process
// runner keeps; weir serve sets them from its flags (docs/security.md).
// Submissions are checked at Prepare, where the pipeline and its options
// first arrive, so a refused job never starts.

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/joboptions"
)

// Confinement limits what jobs may make the server do. It is part of
// ServerOptions; the zero value confines nothing. Errors name weir serve's
// flag for each field.
type Confinement struct {
	// RestrictProcess refuses PROCESS environments, except those whose
	// command is in AllowedProcessCommands (--allow-process-environments
	// unset).
	RestrictProcess bool
	// AllowedProcessCommands are the commands, exact paths, a PROCESS
	// environment may run under RestrictProcess
	// (--allow-process-command).
	AllowedProcessCommands []string
	// AllowedDirs, if set, are the folders every path a job names (its
	// options of kind Path, its file writes' folders) must lie in, after
	// symbolic links are resolved (--allowed-dirs).
	AllowedDirs []string
	// MaxStagedBytesPerJob bounds the bytes one job's artifacts may take
	// as they arrive from its SDK; 0 is unbounded
	// (--max-staged-bytes-per-job). Artifacts linked from the cache cost
	// nothing.
	MaxStagedBytesPerJob int64
	// MaxStagedBytes bounds the bytes staged for every preparation and
	// running job at once; 0 is unbounded (--max-staged-bytes).
	MaxStagedBytes int64
	// MaxConcurrentJobs bounds the jobs running at once; Run refuses one
	// more with RESOURCE_EXHAUSTED. 0 is unbounded
	// (--max-concurrent-jobs).
	MaxConcurrentJobs int
	// MaxRequestBytes bounds a message the server receives (gRPC's
	// MaxRecvMsgSize); 0 is math.MaxInt32 (--max-request-bytes).
	MaxRequestBytes int
}

// maxRecvMsgSize is gRPC's receive limit for c.
func (c *Confinement) maxRecvMsgSize() int {
	if c.MaxRequestBytes <= 0 {
		return math.MaxInt32
	}
	return c.MaxRequestBytes
}

// checkSubmission refuses a pipeline that breaks c: every problem is
// listed, joined.
func (c *Confinement) checkSubmission(p *pipepb.Pipeline, opts *joboptions.Options, stateDir string) error {
	var errs []error
	if c.RestrictProcess {
		errs = append(errs, c.processErrors(p)...)
	}
	if len(c.AllowedDirs) > 0 {
		errs = append(errs, c.pathErrors(p, opts, stateDir)...)
	}
	return errors.Join(errs...)
}

// processErrors lists the PROCESS environments whose command is not allowed.
func (c *Confinement) processErrors(p *pipepb.Pipeline) []error {
	comps := p.GetComponents()
	envs := comps.GetEnvironments()
	var errs []error
	for _, id := range sortedKeys(envs) {
		env := envs[id]
		if env.GetUrn() != fnapi.URNEnvProcess {
			continue
		}
		var pl pipepb.ProcessPayload
		if err := proto.Unmarshal(env.GetPayload(), &pl); err != nil {
			errs = append(errs, fmt.Errorf("environment %q: PROCESS payload: %v", id, err))
			continue
		}
		if slices.Contains(c.AllowedProcessCommands, pl.GetCommand()) {
			continue
		}
		var users []string
		for tid, t := range comps.GetTransforms() {
			if t.GetEnvironmentId() == id {
				users = append(users, tid)
			}
		}
		sort.Strings(users)
		used := ""
		if len(users) > 0 {
			if len(users) > 3 {
				users = append(users[:3], fmt.Sprintf("and %d more", len(users)-3))
			}
			used = " (used by " + strings.Join(users, ", ") + ")"
		}
		errs = append(errs, fmt.Errorf("PROCESS environment %q%s would run command %q on the server: it is not allowed; start weir serve with --allow-process-command=%s, or --allow-process-environments",
			id, used, pl.GetCommand(), pl.GetCommand()))
	}
	return errs
}

// pathErrors lists the paths the job names outside the allowed folders.
func (c *Confinement) pathErrors(p *pipepb.Pipeline, opts *joboptions.Options, stateDir string) []error {
	allowed := slices.Clone(c.AllowedDirs)
	if stateDir != "" {
		allowed = append(allowed, stateDir)
	}
	roots := make([]string, 0, len(allowed))
	for _, d := range allowed {
		if r, err := resolvePath(d); err == nil {
			roots = append(roots, r)
		}
	}
	var errs []error
	check := func(what, path string) {
		r, err := resolvePath(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %v", what, path, err))
			return
		}
		if !slices.ContainsFunc(roots, func(root string) bool { return within(root, r) }) {
			errs = append(errs, fmt.Errorf("%s=%q: path %s is outside the folders the server allows (--allowed-dirs: %s)",
				what, path, r, strings.Join(allowed, ", ")))
		}
	}
	for _, pv := range opts.Paths() {
		check("option --"+pv.Option, pv.Path)
	}
	// Connectors that read or write files say which (connector.Paths).
	comps := p.GetComponents()
	for _, id := range sortedKeys(comps.GetTransforms()) {
		t := comps.GetTransforms()[id]
		conn, _ := connectors().Lookup(t.GetSpec().GetUrn())
		paths, ok := conn.(connector.Paths)
		if !ok {
			continue
		}
		ps, err := paths.Paths(&connector.Transform{ID: id, Proto: t, Components: comps})
		if err != nil {
			continue // translation reports it
		}
		for _, what := range sortedKeys(ps) {
			check(fmt.Sprintf("transform %q (%s) %s", id, t.GetSpec().GetUrn(), what), ps[what])
		}
	}
	return errs
}

// resolvePath makes p absolute and clean, and resolves the symbolic links
// of its deepest existing ancestor, so that a link cannot lead out of an
// allowed folder. The part that does not exist yet is kept as given: once
// cleaned it holds no "..".
func resolvePath(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	existing, rest := abs, ""
	for {
		r, err := filepath.EvalSymlinks(existing)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
}

// within says whether path is root or under it; both are resolved.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && filepath.IsLocal(rel)
}

// LimitError is a submission refused by one of the server's limits.
type LimitError struct {
	Flag  string // weir serve's flag, as --max-staged-bytes
	Limit int64
	What  string // what went past it
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: over the server's limit %s=%d", e.What, e.Flag, e.Limit)
}

// GRPCStatus makes a LimitError RESOURCE_EXHAUSTED.
func (e *LimitError) GRPCStatus() *status.Status {
	return status.New(codes.ResourceExhausted, e.Error())
}

// budget counts what the server holds against its limits. Its zero value
// is ready; the limits are the Confinement's.
type budget struct {
	mu struct {
		sync.Mutex
		staged  int64 // bytes staged by preparations and running jobs
		running int   // jobs holding a slot
	}
}

// reserveStaged adds n bytes to the staged total, or refuses them past
// max (0: unbounded).
func (b *budget) reserveStaged(n, max int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if max > 0 && b.mu.staged+n > max {
		return &LimitError{Flag: "--max-staged-bytes", Limit: max,
			What: fmt.Sprintf("staging %d more bytes with %d staged for all jobs", n, b.mu.staged)}
	}
	b.mu.staged += n
	return nil
}

func (b *budget) releaseStaged(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.staged -= n
}

// acquireJob takes a running job's slot, or refuses past max (0:
// unbounded; force takes one anyway, for a resumed job).
func (b *budget) acquireJob(max int, force bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if max > 0 && b.mu.running >= max && !force {
		return &LimitError{Flag: "--max-concurrent-jobs", Limit: int64(max),
			What: fmt.Sprintf("%d jobs are running", b.mu.running)}
	}
	b.mu.running++
	return nil
}

func (b *budget) releaseJob() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.running--
}

// meteredStream counts the artifact bytes an SDK sends against the job's
// and the server's limits, and fails the staging past either.
type meteredStream struct {
	artifactStream
	s      *Server
	staged *int64 // this attempt's bytes, reserved in s.budget
}

func (m *meteredStream) Recv() (*jobpb.ArtifactResponseWrapper, error) {
	resp, err := m.artifactStream.Recv()
	if err != nil {
		return resp, err
	}
	n := int64(len(resp.GetGetArtifactResponse().GetData()))
	if n == 0 {
		return resp, nil
	}
	if max := m.s.opts.MaxStagedBytesPerJob; max > 0 && *m.staged+n > max {
		return nil, &LimitError{Flag: "--max-staged-bytes-per-job", Limit: max,
			What: fmt.Sprintf("its artifacts pass %d bytes", *m.staged+n)}
	}
	if err := m.s.budget.reserveStaged(n, m.s.opts.MaxStagedBytes); err != nil {
		return nil, err
	}
	*m.staged += n
	return resp, nil
}

// releaseBudget gives back what j holds of the server's limits.
func (s *Server) releaseBudget(j *Job) {
	s.budget.releaseStaged(j.stagedBytes)
	j.stagedBytes = 0
	if j.slot {
		j.slot = false
		s.budget.releaseJob()
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
