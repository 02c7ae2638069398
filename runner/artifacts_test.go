package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/artifact"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// writeFile writes data to dir/name and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func fileArtifact(t *testing.T, path, sha256 string) *pipepb.ArtifactInformation {
	t.Helper()
	payload, err := proto.Marshal(&pipepb.ArtifactFilePayload{Path: path, Sha256: sha256})
	if err != nil {
		t.Fatal(err)
	}
	return &pipepb.ArtifactInformation{TypeUrn: urnArtifactFile, TypePayload: payload}
}

func withRole(t *testing.T, a *pipepb.ArtifactInformation, role string, payload proto.Message) *pipepb.ArtifactInformation {
	t.Helper()
	a.RoleUrn = role
	if payload != nil {
		b, err := proto.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		a.RolePayload = b
	}
	return a
}

func stagedAs(t *testing.T, a *pipepb.ArtifactInformation, name string) *pipepb.ArtifactInformation {
	return withRole(t, a, urnRoleStagingTo, &pipepb.ArtifactStagingToRolePayload{StagedName: name})
}

func filePath(a *pipepb.ArtifactInformation) (string, string, error) {
	if a.GetTypeUrn() != urnArtifactFile {
		return "", "", fmt.Errorf("type %q, want FILE", a.GetTypeUrn())
	}
	var fp pipepb.ArtifactFilePayload
	if err := proto.Unmarshal(a.GetTypePayload(), &fp); err != nil {
		return "", "", err
	}
	return fp.GetPath(), fp.GetSha256(), nil
}

// checkStaged compares a job's staged artifacts with what the SDK had: same
// roles and contents, as FILE artifacts inside the staging directory with a
// correct checksum.
func checkStaged(j *Job, want map[string][]*pipepb.ArtifactInformation, contents map[string][]byte) error {
	var errs []error
	for env, deps := range want {
		got := j.Artifacts[env]
		if len(got) != len(deps) {
			errs = append(errs, fmt.Errorf("env %s: %d artifacts staged, want %d", env, len(got), len(deps)))
			continue
		}
		for i, a := range got {
			p, sum, err := filePath(a)
			if err != nil {
				errs = append(errs, fmt.Errorf("env %s artifact %d: %w", env, i, err))
				continue
			}
			if rel, err := filepath.Rel(j.StagingDir, p); err != nil || !filepath.IsLocal(rel) {
				errs = append(errs, fmt.Errorf("env %s artifact %d: %s is outside %s", env, i, p, j.StagingDir))
			}
			data, err := os.ReadFile(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			src, _, _ := filePath(deps[i])
			if !bytes.Equal(data, contents[src]) {
				errs = append(errs, fmt.Errorf("env %s artifact %d: %d bytes staged, want the %d of %s", env, i, len(data), len(contents[src]), src))
			}
			if sum != sha(data) {
				errs = append(errs, fmt.Errorf("env %s artifact %d: sha256 %s, want %s", env, i, sum, sha(data)))
			}
			if a.GetRoleUrn() != deps[i].GetRoleUrn() || !bytes.Equal(a.GetRolePayload(), deps[i].GetRolePayload()) {
				errs = append(errs, fmt.Errorf("env %s artifact %d: role %q not kept", env, i, a.GetRoleUrn()))
			}
		}
	}
	return errors.Join(errs...)
}

func TestStagingWithSDKClient(t *testing.T) {
	ctx := testCtx(t)
	src := t.TempDir()
	contents := map[string][]byte{}
	add := func(name string, data []byte) string {
		p := writeFile(t, src, name, data)
		contents[p] = data
		return p
	}
	worker := add("worker", []byte("\x7fELF pretend worker"))
	// LOOPBACK: the Go SDK stages an empty temporary file as the worker.
	loopback := add("beamloopbackworker-42", nil)
	big := add("lib.tar.gz", bytes.Repeat([]byte("0123456789"), 300_000)) // several chunks

	want := map[string][]*pipepb.ArtifactInformation{
		"go":       {withRole(t, fileArtifact(t, worker, sha(contents[worker])), urnRoleGoWorker, nil)},
		"loopback": {withRole(t, fileArtifact(t, loopback, sha(nil)), urnRoleGoWorker, nil)},
		"py": {
			stagedAs(t, fileArtifact(t, big, ""), "deps/lib.tar.gz"),
			stagedAs(t, fileArtifact(t, worker, ""), "deps/lib.tar.gz"), // same name, kept apart
			fileArtifact(t, worker, ""),
		},
	}
	envs := map[string][]*pipepb.ArtifactInformation{"no-deps": nil}
	for k, v := range want {
		envs[k] = v
	}

	ts := startServer(t, ExecutorFunc(func(ctx context.Context, j *Job) error {
		return checkStaged(j, want, contents)
	}), ServerOptions{})
	prep, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipelineWith(envs), JobName: "staged"})
	if err != nil {
		t.Fatal(err)
	}
	// The Go SDK's own staging client, exactly as the universal runner calls it.
	token, err := runnerlib.Stage(ctx, prep.GetPreparationId(), prep.GetArtifactStagingEndpoint().GetUrl(), "", prep.GetStagingSessionToken())
	if err != nil {
		t.Fatalf("Stage: %v", err)
	}
	id, err := runnerlib.Submit(ctx, ts.client, prep.GetPreparationId(), token)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if err := waitForCompletion(ctx, ts.client, id); err != nil {
		t.Fatalf("job: %v", err)
	}
	j := ts.s.Job(JobID(id))
	if j.StagingDir == "" {
		t.Fatal("job has no staging directory")
	}
	if _, err := os.Stat(j.StagingDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("staging directory %s still there after the job ended (%v)", j.StagingDir, err)
	}
}

func TestStagingRefusesEscapingNames(t *testing.T) {
	base := t.TempDir()
	for _, name := range []string{
		"../evil",
		"a/../../evil",
		"deps/../../../../evil",
		"..",
		".",
		filepath.Join(base, "evil-absolute"),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			ts := startServer(t, ExecutorFunc(func(context.Context, *Job) error { return nil }),
				ServerOptions{StagingRoot: filepath.Join(base, "staging")})
			src := writeFile(t, t.TempDir(), "payload", []byte("evil"))
			p := pipelineWith(map[string][]*pipepb.ArtifactInformation{
				"env": {fileArtifact(t, src, ""), stagedAs(t, fileArtifact(t, src, ""), name)},
			})
			prep, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: p})
			if err != nil {
				t.Fatal(err)
			}
			err = runnerlib.StageViaPortableAPI(ctx, ts.conn, "", prep.GetStagingSessionToken())
			if err == nil || !strings.Contains(err.Error(), "leaves the staging directory") {
				t.Fatalf("staging %q: %v, want it refused", name, err)
			}
			_, err = ts.client.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
			if status.Code(err) != codes.FailedPrecondition {
				t.Errorf("Run after refused staging: %v, want FailedPrecondition", err)
			}
		})
	}
	// Nothing was written anywhere near, inside or out.
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("file %s written by refused staging", p)
		}
		return err
	})
}

func TestStagingChecksDeclaredSHA256(t *testing.T) {
	ctx := testCtx(t)
	ts := startServer(t, ExecutorFunc(func(context.Context, *Job) error { return nil }), ServerOptions{})
	src := writeFile(t, t.TempDir(), "worker", []byte("actual content"))
	p := pipelineWith(map[string][]*pipepb.ArtifactInformation{
		"go": {fileArtifact(t, src, sha([]byte("declared content")))},
	})
	prep, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: p})
	if err != nil {
		t.Fatal(err)
	}
	err = runnerlib.StageViaPortableAPI(ctx, ts.conn, "", prep.GetStagingSessionToken())
	if err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("staging with a wrong checksum: %v, want a sha256 error", err)
	}
}

// sdkStub is a hand-driven SDK side of the reverse retrieval protocol, for
// tests that must act between its steps.
type sdkStub struct {
	t      *testing.T
	stream jobpb.ArtifactStagingService_ReverseArtifactRetrievalServiceClient
}

func (s *sdkStub) recv() *jobpb.ArtifactRequestWrapper {
	s.t.Helper()
	req, err := s.stream.Recv()
	if err != nil {
		s.t.Fatalf("staging stream: %v", err)
	}
	return req
}

func (s *sdkStub) send(resp *jobpb.ArtifactResponseWrapper) {
	s.t.Helper()
	if err := s.stream.Send(resp); err != nil {
		s.t.Fatalf("staging stream: %v", err)
	}
}

func TestRunWaitsForStaging(t *testing.T) {
	ctx := testCtx(t)
	staged := make(chan *Job, 1)
	ts := startServer(t, ExecutorFunc(func(ctx context.Context, j *Job) error {
		staged <- j
		return nil
	}), ServerOptions{})
	dep := fileArtifact(t, "/sdk/side/worker", "")
	prep, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{
		Pipeline: pipelineWith(map[string][]*pipepb.ArtifactInformation{"go": {dep}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := jobpb.NewArtifactStagingServiceClient(ts.conn).ReverseArtifactRetrievalService(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sdk := &sdkStub{t: t, stream: stream}
	sdk.send(&jobpb.ArtifactResponseWrapper{StagingToken: prep.GetStagingSessionToken()})
	resolve := sdk.recv().GetResolveArtifact()
	if resolve == nil || len(resolve.GetArtifacts()) != 1 {
		t.Fatalf("first request %v, want to resolve the one dependency", resolve)
	}

	// Staging is under way: Run must wait for it rather than start the job
	// without its artifacts.
	type result struct {
		resp *jobpb.RunJobResponse
		err  error
	}
	ran := make(chan result, 1)
	go func() {
		resp, err := ts.client.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
		ran <- result{resp, err}
	}()

	sdk.send(&jobpb.ArtifactResponseWrapper{Response: &jobpb.ArtifactResponseWrapper_ResolveArtifactResponse{
		ResolveArtifactResponse: &jobpb.ResolveArtifactsResponse{Replacements: resolve.GetArtifacts()},
	}})
	if get := sdk.recv().GetGetArtifact(); !proto.Equal(get.GetArtifact(), dep) {
		t.Fatalf("GetArtifact for %v, want %v", get.GetArtifact(), dep)
	}
	select {
	case r := <-ran:
		t.Fatalf("Run returned %v, %v before staging finished", r.resp, r.err)
	default:
	}
	for _, chunk := range []string{"hello, ", "world"} {
		sdk.send(&jobpb.ArtifactResponseWrapper{Response: &jobpb.ArtifactResponseWrapper_GetArtifactResponse{
			GetArtifactResponse: &jobpb.GetArtifactResponse{Data: []byte(chunk)},
		}})
	}
	sdk.send(&jobpb.ArtifactResponseWrapper{IsLast: true, Response: &jobpb.ArtifactResponseWrapper_GetArtifactResponse{
		GetArtifactResponse: &jobpb.GetArtifactResponse{},
	}})
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("staging stream ended with %v, want EOF (success)", err)
	}

	r := <-ran
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	j := <-staged
	arts := j.Artifacts["go"]
	if len(arts) != 1 {
		t.Fatalf("artifacts %v, want one", j.Artifacts)
	}
	p, _, err := filePath(arts[0])
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(p) != "worker" {
		t.Errorf("staged as %s, want the SDK file's base name", p)
	}
	// The job is DONE and its directory removed, so only the path is left to
	// check; the content was checked through the SDK in TestStagingWithSDKClient.
	if last(ts.states(t, ctx, r.resp.GetJobId())) != jobpb.JobState_DONE {
		t.Error("job did not finish")
	}
}

func TestStagedName(t *testing.T) {
	tests := []struct {
		name string
		dep  *pipepb.ArtifactInformation
		want string // "" means refused
	}{
		{"file base name", fileArtifact(t, "/tmp/x/worker-1", ""), "worker-1"},
		{"file with no name", fileArtifact(t, "", ""), "artifact"},
		{"file path ending in ..", fileArtifact(t, "/tmp/..", ""), "artifact"},
		{"windows path", fileArtifact(t, `C:\Users\me\lib.jar`, ""), filepath.Base(filepath.ToSlash(`C:\Users\me\lib.jar`))},
		{"staged name", stagedAs(t, fileArtifact(t, "/x", ""), "deps/lib.jar"), filepath.FromSlash("deps/lib.jar")},
		{"staged name escaping", stagedAs(t, fileArtifact(t, "/x", ""), "../lib.jar"), ""},
		{"staged name absolute", stagedAs(t, fileArtifact(t, "/x", ""), "/etc/cron.d/x"), ""},
		{"staged name empty", stagedAs(t, fileArtifact(t, "/x", ""), ""), ""},
		{"unknown type", &pipepb.ArtifactInformation{TypeUrn: "beam:artifact:type:maven:v1"}, "artifact"},
		{"bad role payload", &pipepb.ArtifactInformation{RoleUrn: urnRoleStagingTo, RolePayload: []byte{0xff}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := stagedName(tt.dep)
			if tt.want == "" {
				if err == nil {
					t.Errorf("stagedName = %q, want refused", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("stagedName = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// serveRetrieval serves j's artifacts the way the Fn API side does, and
// returns a client and the endpoint.
func serveRetrieval(t *testing.T, j *Job) (jobpb.ArtifactRetrievalServiceClient, string) {
	t.Helper()
	g := grpc.NewServer()
	jobpb.RegisterArtifactRetrievalServiceServer(g, NewArtifactRetrieval(j))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return jobpb.NewArtifactRetrievalServiceClient(conn), lis.Addr().String()
}

func TestArtifactRetrievalWithSDK(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	contents := map[string][]byte{
		"env0/0/worker": []byte("\x7fELF pretend worker"),
		"env0/1/big":    bytes.Repeat([]byte("abcdefgh"), 400_000), // about 3 MiB: several chunks
		"env0/2/empty":  nil,
	}
	art := func(rel string) *pipepb.ArtifactInformation {
		return fileArtifact(t, writeFile(t, dir, rel, contents[rel]), sha(contents[rel]))
	}
	j := NewJob("retrieval-1", "retrieval", pipelineWith(nil), nil)
	j.StagingDir = dir
	j.Artifacts = map[string][]*pipepb.ArtifactInformation{"go": {
		withRole(t, art("env0/0/worker"), urnRoleGoWorker, nil),
		stagedAs(t, art("env0/1/big"), "deps/big.bin"),
		art("env0/2/empty"),
	}}
	_, endpoint := serveRetrieval(t, j)

	// The Go SDK worker's own retrieval, which also checks every sha256.
	dest := t.TempDir()
	got, err := artifact.Materialize(ctx, endpoint, j.Artifacts["go"], "", dest)
	if err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	if len(got) != 3 {
		t.Fatalf("materialized %d artifacts, want 3", len(got))
	}
	for i, rel := range []string{"env0/0/worker", "env0/1/big", "env0/2/empty"} {
		p, _, err := filePath(got[i])
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dest, p))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, contents[rel]) {
			t.Errorf("%s: got %d bytes, want %d", rel, len(data), len(contents[rel]))
		}
	}
}

func TestArtifactRetrievalRefuses(t *testing.T) {
	ctx := testCtx(t)
	base := t.TempDir()
	dir := filepath.Join(base, "staging")
	writeFile(t, dir, "env0/0/ok", []byte("ok"))
	outside := writeFile(t, base, "secret", []byte("secret"))
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	j := NewJob("refuse-1", "refuse", pipelineWith(nil), nil)
	j.StagingDir = dir
	client, _ := serveRetrieval(t, j)
	unstaged := NewJob("unstaged-1", "unstaged", pipelineWith(nil), nil)
	unstagedClient, _ := serveRetrieval(t, unstaged)

	get := func(c jobpb.ArtifactRetrievalServiceClient, a *pipepb.ArtifactInformation) ([]byte, error) {
		stream, err := c.GetArtifact(ctx, &jobpb.GetArtifactRequest{Artifact: a})
		if err != nil {
			return nil, err
		}
		var data []byte
		for {
			resp, err := stream.Recv()
			if err == io.EOF {
				return data, nil
			}
			if err != nil {
				return data, err
			}
			data = append(data, resp.GetData()...)
		}
	}
	if data, err := get(client, fileArtifact(t, filepath.Join(dir, "env0/0/ok"), "")); err != nil || string(data) != "ok" {
		t.Fatalf("staged artifact: %q, %v", data, err)
	}
	tests := []struct {
		name   string
		client jobpb.ArtifactRetrievalServiceClient
		a      *pipepb.ArtifactInformation
		want   codes.Code
	}{
		{"no artifact", client, nil, codes.InvalidArgument},
		{"not a file", client, &pipepb.ArtifactInformation{TypeUrn: urnArtifactURL}, codes.InvalidArgument},
		{"bad payload", client, &pipepb.ArtifactInformation{TypeUrn: urnArtifactFile, TypePayload: []byte{0xff}}, codes.InvalidArgument},
		{"absolute outside", client, fileArtifact(t, outside, ""), codes.PermissionDenied},
		{"dot-dot outside", client, fileArtifact(t, filepath.Join(dir, "..", "secret"), ""), codes.PermissionDenied},
		{"dot-dot unclean", client, fileArtifact(t, dir+"/env0/../../secret", ""), codes.PermissionDenied},
		{"relative", client, fileArtifact(t, "env0/0/ok", ""), codes.PermissionDenied},
		{"symlink out", client, fileArtifact(t, filepath.Join(dir, "link"), ""), codes.PermissionDenied},
		{"system file", client, fileArtifact(t, "/etc/passwd", ""), codes.PermissionDenied},
		{"missing", client, fileArtifact(t, filepath.Join(dir, "env0/9/none"), ""), codes.NotFound},
		{"job without staging", unstagedClient, fileArtifact(t, filepath.Join(dir, "env0/0/ok"), ""), codes.PermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := get(tt.client, tt.a)
			if status.Code(err) != tt.want {
				t.Errorf("GetArtifact: %v, want %v", err, tt.want)
			}
			if len(data) > 0 {
				t.Errorf("GetArtifact sent %q", data)
			}
		})
	}
	resp, err := client.ResolveArtifacts(ctx, &jobpb.ResolveArtifactsRequest{Artifacts: j.Artifacts["go"]})
	if err != nil || len(resp.GetReplacements()) != 0 {
		t.Errorf("ResolveArtifacts = %v, %v; want them as given", resp, err)
	}
}
