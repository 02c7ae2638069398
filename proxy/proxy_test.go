package proxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/expansion"
	"github.com/weir-runner/weir/proxy"
	"github.com/weir-runner/weir/runner"
	"github.com/weir-runner/weir/secure"
	"github.com/weir-runner/weir/secure/securetest"
)

const token = "0123456789abcdef0123456789abcdef"

// secured is a policy of TLS with client certificates and a token, and
// the client options that satisfy it.
func secured(t testing.TB) (*secure.Policy, secure.Client) {
	t.Helper()
	f := securetest.New(t)
	tlsCfg, err := secure.LoadServerTLS(secure.ServerTLSFiles{Cert: f.ServerCert, Key: f.ServerKey, ClientCA: f.CA})
	if err != nil {
		t.Fatal(err)
	}
	toks, err := secure.TokensOf(token)
	if err != nil {
		t.Fatal(err)
	}
	return secure.NewPolicy(tlsCfg, toks, slog.New(slog.DiscardHandler)),
		secure.Client{CAFile: f.CA, CertFile: f.ClientCert, KeyFile: f.ClientKey, Token: token}
}

func startServer(t *testing.T, exec runner.Executor, access *secure.Policy) *runner.Server {
	t.Helper()
	s := runner.NewServer(exec, runner.ServerOptions{StagingRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler), Access: access})
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	return s
}

// startProxy serves a proxy to the upstreams on a loopback port.
func startProxy(t *testing.T, job, exp string, client secure.Client) string {
	t.Helper()
	opts := proxy.Options{Logger: slog.New(slog.DiscardHandler)}
	for _, u := range []struct {
		addr string
		conn *grpc.ClientConnInterface
	}{{job, &opts.Job}, {exp, &opts.Expansion}} {
		if u.addr == "" {
			continue
		}
		c, err := proxy.Dial(u.addr, client)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		*u.conn = c
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := proxy.New(opts)
	go p.Serve(lis)
	t.Cleanup(func() { p.Stop(context.Background()) })
	return lis.Addr().String()
}

func dialPlain(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// A job goes through the proxy as the Go SDK submits it: Prepare (whose
// staging endpoint must become the proxy's), staging over the reverse
// artifact stream (both directions, several chunks), Run, and the state
// stream, while the server requires TLS, a client certificate and a
// token, none of which the SDK's client has.
func TestJobThroughProxy(t *testing.T) {
	ctx := testCtx(t)
	access, client := secured(t)
	data := bytes.Repeat([]byte("weir proxy "), 300_000) // 3.3 MB: several chunks of 1 MiB
	sum := sha256.Sum256(data)
	dep := filepath.Join(t.TempDir(), "dep.jar")
	if err := os.WriteFile(dep, data, 0o644); err != nil {
		t.Fatal(err)
	}
	staged := make(chan []byte, 1)
	s := startServer(t, runner.ExecutorFunc(func(ctx context.Context, j *runner.Job) error {
		for _, a := range j.Artifacts["env"] {
			var pl pipepb.ArtifactFilePayload
			if err := proto.Unmarshal(a.GetTypePayload(), &pl); err != nil {
				return err
			}
			got, err := os.ReadFile(pl.GetPath())
			if err != nil {
				return err
			}
			staged <- got
		}
		return nil
	}), access)
	addr := startProxy(t, s.Endpoint(), "", client)
	jobs := jobpb.NewJobServiceClient(dialPlain(t, addr))

	payload, _ := proto.Marshal(&pipepb.ArtifactFilePayload{Path: dep, Sha256: hex.EncodeToString(sum[:])})
	pipeline := &pipepb.Pipeline{Components: &pipepb.Components{Environments: map[string]*pipepb.Environment{
		"env": {Urn: "beam:env:external:v1", Dependencies: []*pipepb.ArtifactInformation{
			{TypeUrn: "beam:artifact:type:file:v1", TypePayload: payload}}}}}}
	prep, err := jobs.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipeline, JobName: "proxied"})
	if err != nil {
		t.Fatalf("Prepare through the proxy: %v", err)
	}
	if got := prep.GetArtifactStagingEndpoint().GetUrl(); got != addr {
		t.Fatalf("staging endpoint %q, want the proxy's %q: the SDK would stage to the secured server directly", got, addr)
	}
	retrieval, err := runnerlib.Stage(ctx, prep.GetPreparationId(), prep.GetArtifactStagingEndpoint().GetUrl(), "", prep.GetStagingSessionToken())
	if err != nil {
		t.Fatalf("Stage through the proxy: %v", err)
	}
	id, err := runnerlib.Submit(ctx, jobs, prep.GetPreparationId(), retrieval)
	if err != nil {
		t.Fatalf("Run through the proxy: %v", err)
	}
	if err := runnerlib.WaitForCompletion(ctx, jobs, id); err != nil {
		t.Fatalf("job: %v", err)
	}
	if got := <-staged; !bytes.Equal(got, data) {
		t.Errorf("staged %d bytes, want the %d sent", len(got), len(data))
	}
}

// The upstream's errors reach the client as they are, and the client's
// own authorization never reaches the upstream beside the proxy's.
func TestProxyPassesStatusAndReplacesAuthorization(t *testing.T) {
	ctx := testCtx(t)
	access, client := secured(t)
	s := startServer(t, runner.ExecutorFunc(func(context.Context, *runner.Job) error { return nil }), access)
	jobs := jobpb.NewJobServiceClient(dialPlain(t, startProxy(t, s.Endpoint(), "", client)))

	_, err := jobs.GetState(ctx, &jobpb.GetJobStateRequest{JobId: "no-such-job"})
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "no-such-job") {
		t.Errorf("GetState of an unknown job: %v, want the server's NotFound", err)
	}
	wrong := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+strings.Repeat("x", 32))
	if _, err := jobs.GetJobs(wrong, &jobpb.GetJobsRequest{}); err != nil {
		t.Errorf("GetJobs with the client's own wrong token: %v; the proxy must send only its own", err)
	}
}

// A proxy whose own credentials the server refuses passes the refusal on.
func TestProxyWithoutTokenIsRefused(t *testing.T) {
	ctx := testCtx(t)
	access, client := secured(t)
	s := startServer(t, runner.ExecutorFunc(func(context.Context, *runner.Job) error { return nil }), access)
	client.Token = ""
	jobs := jobpb.NewJobServiceClient(dialPlain(t, startProxy(t, s.Endpoint(), "", client)))
	_, err := jobs.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: &pipepb.Pipeline{}})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("Prepare through a proxy without a token: %v, want Unauthenticated", err)
	}
}

// ExpansionService calls go to the expansion upstream, or are refused
// when the proxy has none.
func TestProxyExpansion(t *testing.T) {
	ctx := testCtx(t)
	access, client := secured(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	exp := expansion.NewServer(expansion.NewService(expansion.Options{Logger: slog.New(slog.DiscardHandler)}),
		access.GRPCServerOptions("expansion service")...)
	go exp.Serve(lis)
	t.Cleanup(func() { exp.Stop(context.Background()) })
	s := startServer(t, runner.ExecutorFunc(func(context.Context, *runner.Job) error { return nil }), access)
	req := &jobpb.ExpansionRequest{Transform: &pipepb.PTransform{Spec: &pipepb.FunctionSpec{Urn: "beam:transform:unknown:v1"}}}

	with := jobpb.NewExpansionServiceClient(dialPlain(t, startProxy(t, s.Endpoint(), lis.Addr().String(), client)))
	res, err := with.Expand(ctx, req)
	if err != nil || !strings.Contains(res.GetError(), "beam:transform:unknown:v1") {
		t.Errorf("Expand through the proxy: %v, %q; want weir's answer naming the URN", err, res.GetError())
	}
	without := jobpb.NewExpansionServiceClient(dialPlain(t, startProxy(t, s.Endpoint(), "", client)))
	if _, err := without.Expand(ctx, req); status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "--expansion-endpoint") {
		t.Errorf("Expand through a proxy without an expansion upstream: %v", err)
	}
}

// BenchmarkGetJobs measures one unary call to a server with TLS, client
// certificates and a token: made directly with the client's credentials,
// and through the proxy (plaintext on loopback, then the proxy's own
// connection), which adds a hop and a copy of each message.
func BenchmarkGetJobs(b *testing.B) {
	access, client := secured(b)
	s := runner.NewServer(runner.ExecutorFunc(func(context.Context, *runner.Job) error { return nil }),
		runner.ServerOptions{StagingRoot: b.TempDir(), Logger: slog.New(slog.DiscardHandler), Access: access})
	if err := s.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer s.Stop(context.Background())
	direct, err := proxy.Dial(s.Endpoint(), client)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	p := proxy.New(proxy.Options{Job: direct, Logger: slog.New(slog.DiscardHandler)})
	go p.Serve(lis)
	defer p.Stop(context.Background())
	proxied, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer proxied.Close()
	for _, c := range []struct {
		name string
		conn *grpc.ClientConn
	}{{"direct", direct}, {"proxied", proxied}} {
		b.Run(c.name, func(b *testing.B) {
			jobs := jobpb.NewJobServiceClient(c.conn)
			for b.Loop() {
				if _, err := jobs.GetJobs(b.Context(), &jobpb.GetJobsRequest{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
