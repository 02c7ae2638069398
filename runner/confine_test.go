package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/fnapi"
)

// confinedPipeline is a pipeline with a PROCESS environment running
// command (none for ""), used by transform "read", and a file write into
// fileDir (none for "").
func confinedPipeline(t *testing.T, command, fileDir string) *pipepb.Pipeline {
	t.Helper()
	p := pipelineWith(nil)
	comps := p.Components
	comps.Transforms = map[string]*pipepb.PTransform{}
	if command != "" {
		payload, err := proto.Marshal(&pipepb.ProcessPayload{Command: command})
		if err != nil {
			t.Fatal(err)
		}
		comps.Environments["py"] = &pipepb.Environment{Urn: fnapi.URNEnvProcess, Payload: payload}
		comps.Transforms["read"] = &pipepb.PTransform{UniqueName: "read", EnvironmentId: "py"}
	}
	if fileDir != "" {
		cfg, err := json.Marshal(fileio.WriteConfig{Dir: fileDir})
		if err != nil {
			t.Fatal(err)
		}
		comps.Transforms["out"] = &pipepb.PTransform{UniqueName: "out",
			Spec: &pipepb.FunctionSpec{Urn: fileio.WriteURN, Payload: cfg}}
	}
	return p
}

// A confined server refuses at Prepare what its confinement does not
// allow, naming the option or environment, the path or command, and the
// flag; the zero Confinement (the in-process runner's) allows everything.
func TestConfinementAtPrepare(t *testing.T) {
	base := t.TempDir()
	allowed := filepath.Join(base, "allowed")
	outside := filepath.Join(base, "outside")
	state := filepath.Join(base, "state")
	for _, d := range []string{allowed, outside, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(allowed, "link")); err != nil {
		t.Fatal(err)
	}
	const boot = "/opt/apache/beam/boot"
	dirs := Confinement{AllowedDirs: []string{allowed}}
	for _, tc := range []struct {
		name    string
		conf    Confinement
		command string            // a PROCESS environment's, if any
		fileDir string            // a file write's folder, if any
		options map[string]string // weir_... options
		want    []string          // in the error; none: accepted
	}{
		{name: "process refused", conf: Confinement{RestrictProcess: true}, command: boot,
			want: []string{`"py"`, "read", boot, "--allow-process-command=" + boot, "--allow-process-environments"}},
		{name: "process not on the list", conf: Confinement{RestrictProcess: true, AllowedProcessCommands: []string{"/bin/other"}}, command: boot,
			want: []string{`"py"`, boot}},
		{name: "process on the list", conf: Confinement{RestrictProcess: true, AllowedProcessCommands: []string{"/bin/other", boot}}, command: boot},
		{name: "process unrestricted", command: boot},
		{name: "dead letter outside", conf: dirs, options: map[string]string{"weir_dead_letter": filepath.Join(outside, "late.jsonl")},
			want: []string{"--weir_dead_letter", filepath.Join(outside, "late.jsonl"), "--allowed-dirs: " + allowed}},
		{name: "dead letter inside, not there yet", conf: dirs, options: map[string]string{"weir_dead_letter": filepath.Join(allowed, "a", "b", "late.jsonl")}},
		{name: "the allowed folder itself", conf: dirs, options: map[string]string{"weir_savepoint": allowed, "weir_checkpoint_interval": "10s"}},
		{name: "dot-dot out", conf: dirs, options: map[string]string{"weir_savepoint": allowed + "/../outside/sp", "weir_checkpoint_interval": "10s"},
			want: []string{"--weir_savepoint", "outside"}},
		{name: "symlink out", conf: dirs, options: map[string]string{"weir_checkpoint_dir": filepath.Join(allowed, "link", "ck"), "weir_checkpoint_interval": "10s"},
			want: []string{"--weir_checkpoint_dir", filepath.Join(outside, "ck")}},
		{name: "prefix is not a parent", conf: dirs, options: map[string]string{"weir_dead_letter": allowed + "-not/late.jsonl"},
			want: []string{"--weir_dead_letter"}},
		{name: "state dir allowed", conf: Confinement{AllowedDirs: []string{allowed}}, options: map[string]string{"weir_checkpoint_dir": filepath.Join(state, "jobs", "x"), "weir_checkpoint_interval": "10s"}},
		{name: "file write outside", conf: dirs, fileDir: outside,
			want: []string{`transform "out" (beam:transform:weir:file_write:v1) dir`, outside, allowed}},
		{name: "file write inside", conf: dirs, fileDir: filepath.Join(allowed, "out")},
		{name: "unconfined", command: boot, fileDir: outside, options: map[string]string{"weir_dead_letter": filepath.Join(outside, "late.jsonl")}},
		{name: "both refused", conf: Confinement{RestrictProcess: true, AllowedDirs: []string{allowed}}, command: boot, fileDir: outside,
			want: []string{boot, `transform "out" (beam:transform:weir:file_write:v1) dir`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			opts := ServerOptions{Confinement: tc.conf}
			if tc.name == "state dir allowed" {
				opts.StateDir = state
			}
			ts := startServer(t, ExecutorFunc(func(context.Context, *Job) error { return nil }), opts)
			m := map[string]any{}
			for k, v := range tc.options {
				m["beam:option:"+k+":v1"] = v
			}
			po, err := structpb.NewStruct(m)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: confinedPipeline(t, tc.command, tc.fileDir), JobName: "confined", PipelineOptions: po})
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Prepare: %v, want it accepted", err)
				}
				return
			}
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("Prepare: %v, want PermissionDenied", err)
			}
			t.Logf("refused: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if n := len(ts.s.Jobs()); n != 0 {
				t.Errorf("%d jobs started, want none", n)
			}
		})
	}
}

// Run refuses a job past --max-concurrent-jobs with RESOURCE_EXHAUSTED, and
// takes one again when a running job ends.
func TestMaxConcurrentJobs(t *testing.T) {
	ctx := testCtx(t)
	started := make(chan JobID, 4)
	ts := startServer(t, blockingExecutor(started), ServerOptions{Confinement: Confinement{MaxConcurrentJobs: 1}})
	prepare := func() string {
		prep, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipelineWith(nil), JobName: "limited"})
		if err != nil {
			t.Fatal(err)
		}
		return prep.GetPreparationId()
	}
	first, err := ts.client.Run(ctx, &jobpb.RunJobRequest{PreparationId: prepare()})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	second := prepare()
	_, err = ts.client.Run(ctx, &jobpb.RunJobRequest{PreparationId: second})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "--max-concurrent-jobs=1") {
		t.Fatalf("second Run: %v, want RESOURCE_EXHAUSTED naming --max-concurrent-jobs=1", err)
	}
	if _, err := ts.client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: first.GetJobId()}); err != nil {
		t.Fatal(err)
	}
	waitForCompletion(ctx, ts.client, first.GetJobId())
	// The refused preparation is still there to run.
	if _, err := ts.client.Run(ctx, &jobpb.RunJobRequest{PreparationId: second}); err != nil {
		t.Fatalf("Run after the first job ended: %v", err)
	}
}

// Staging stops past --max-staged-bytes-per-job and --max-staged-bytes
// with RESOURCE_EXHAUSTED naming the flag; an ended job's bytes count no
// more.
func TestMaxStagedBytes(t *testing.T) {
	src := t.TempDir()
	small := writeFile(t, src, "small", bytes.Repeat([]byte("s"), 600))
	big := writeFile(t, src, "big", bytes.Repeat([]byte("b"), 2000))
	pipeline := func(path string) *pipepb.Pipeline {
		return pipelineWith(map[string][]*pipepb.ArtifactInformation{"env": {fileArtifact(t, path, "")}})
	}
	type submission struct {
		path string
		want string // the flag in the error; "" to succeed
	}
	for _, tc := range []struct {
		name string
		conf Confinement
		subs []submission
	}{
		{"per job", Confinement{MaxStagedBytesPerJob: 1000},
			[]submission{{small, ""}, {big, "--max-staged-bytes-per-job=1000"}}},
		{"all jobs", Confinement{MaxStagedBytes: 1000},
			[]submission{{small, ""}, {small, "--max-staged-bytes=1000"}}},
		{"unlimited", Confinement{}, []submission{{big, ""}, {big, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			started := make(chan JobID, len(tc.subs))
			ts := startServer(t, blockingExecutor(started), ServerOptions{Confinement: tc.conf})
			var running []string
			for i, sub := range tc.subs {
				prep, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipeline(sub.path), JobName: "staged"})
				if err != nil {
					t.Fatal(err)
				}
				// The SDK's portable staging alone: runnerlib.Stage would
				// fall back to the legacy API and hide the error.
				token := prep.GetStagingSessionToken()
				err = runnerlib.StageViaPortableAPI(ctx, ts.conn, "", token)
				if sub.want != "" {
					if err == nil || !strings.Contains(err.Error(), sub.want) || !strings.Contains(err.Error(), "ResourceExhausted") {
						t.Fatalf("submission %d: Stage: %v, want RESOURCE_EXHAUSTED naming %s", i, err, sub.want)
					}
					continue
				}
				if err != nil {
					t.Fatalf("submission %d: Stage: %v", i, err)
				}
				id, err := runnerlib.Submit(ctx, ts.client, prep.GetPreparationId(), token)
				if err != nil {
					t.Fatalf("submission %d: Submit: %v", i, err)
				}
				<-started
				running = append(running, id)
			}
			// Once the running jobs end, their bytes are given back.
			for _, id := range running {
				ts.client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: id})
				waitForCompletion(ctx, ts.client, id)
			}
			ts.s.budget.mu.Lock()
			staged, slots := ts.s.budget.mu.staged, ts.s.budget.mu.running
			ts.s.budget.mu.Unlock()
			if staged != 0 || slots != 0 {
				t.Errorf("after the jobs ended: %d bytes staged and %d slots held, want none", staged, slots)
			}
		})
	}
}

// A request larger than --max-request-bytes is refused by gRPC with
// RESOURCE_EXHAUSTED.
func TestMaxRequestBytes(t *testing.T) {
	ctx := testCtx(t)
	ts := startServer(t, ExecutorFunc(func(context.Context, *Job) error { return nil }), ServerOptions{Confinement: Confinement{MaxRequestBytes: 4096}})
	p := pipelineWith(nil)
	if _, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: p, JobName: "small"}); err != nil {
		t.Fatalf("small Prepare: %v", err)
	}
	p.Components.Transforms = map[string]*pipepb.PTransform{"big": {UniqueName: "big",
		Spec: &pipepb.FunctionSpec{Urn: "beam:transform:pardo:v1", Payload: bytes.Repeat([]byte("x"), 8192)}}}
	_, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: p, JobName: "big"})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "larger than max") {
		t.Fatalf("big Prepare: %v, want RESOURCE_EXHAUSTED", err)
	}
}

// resolvePath resolves the links of the part of a path that exists and
// keeps the rest.
func TestResolvePath(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		filepath.Join(base, "link", "x", "y"): filepath.Join(base, "real", "x", "y"),
		filepath.Join(base, "a", "..", "b"):   filepath.Join(base, "b"),
		base:                                  base,
	} {
		if got, err := resolvePath(in); err != nil || got != want {
			t.Errorf("resolvePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if !within(base, base) || !within(base, filepath.Join(base, "x")) || within(base, base+"x") || within(filepath.Join(base, "x"), base) {
		t.Error("within is wrong about a folder and its children")
	}
}
