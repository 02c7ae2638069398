package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weir-runner/weir/runner"
	"github.com/weir-runner/weir/secure"
	"github.com/weir-runner/weir/secure/securetest"
)

const cliToken = "0123456789abcdef0123456789abcdef"

// securedServer is a job service that requires TLS, a client certificate
// and a token; it returns the server, its certificates and a token file.
func securedServer(t *testing.T) (*runner.Server, securetest.Files, string) {
	t.Helper()
	f := securetest.New(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("# weir\n"+cliToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sf := serverSecurityFlags{tlsCert: f.ServerCert, tlsKey: f.ServerKey, tlsClientCA: f.CA, tokenFile: tokenFile, fnAPIHost: "127.0.0.1"}
	access, err := sf.policy(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s := runner.NewServer(runner.ExecutorFunc(func(ctx context.Context, j *runner.Job) error { <-ctx.Done(); return ctx.Err() }),
		runner.ServerOptions{StagingRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler), Access: access})
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	return s, f, tokenFile
}

// The CLI reaches a secured server with the flags, or the environment,
// and is refused without them.
func TestCLIAgainstSecuredServer(t *testing.T) {
	s, f, tokenFile := securedServer(t)
	job := submit(t, s, "secured")
	for _, k := range []string{secure.EnvTLS, secure.EnvTLSCA, secure.EnvTLSCert, secure.EnvTLSKey, secure.EnvToken, secure.EnvTokenFile} {
		t.Setenv(k, "")
	}
	ep := "--endpoint=" + s.Endpoint()
	tlsFlags := []string{"--tls-ca=" + f.CA, "--tls-cert=" + f.ClientCert, "--tls-key=" + f.ClientKey}
	jobs := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runMain(&out, &errOut, append([]string{"jobs", ep, "--timeout=10s"}, args...)...)
		return code, out.String(), errOut.String()
	}
	code, out, errOut := jobs(append(tlsFlags, "--token-file="+tokenFile)...)
	if code != 0 || !strings.Contains(out, job) {
		t.Fatalf("jobs with TLS, certificate and token: exit %d, %s%s", code, out, errOut)
	}
	if code, _, errOut := jobs(tlsFlags...); code == 0 || !strings.Contains(errOut, "no bearer token") {
		t.Errorf("jobs without the token: exit %d, %s; want a refusal that says why", code, errOut)
	}
	if code, _, _ := jobs("--tls-ca="+f.CA, "--token-file="+tokenFile); code == 0 {
		t.Error("jobs without a client certificate: exit 0")
	}
	if code, _, _ := jobs("--token-file=" + tokenFile); code == 0 {
		t.Error("jobs in plaintext against a TLS server: exit 0")
	}
	// The same from the environment, the token itself in WEIR_TOKEN.
	t.Setenv(secure.EnvTLSCA, f.CA)
	t.Setenv(secure.EnvTLSCert, f.ClientCert)
	t.Setenv(secure.EnvTLSKey, f.ClientKey)
	t.Setenv(secure.EnvToken, cliToken)
	if code, out, errOut := jobs(); code != 0 || !strings.Contains(out, job) {
		t.Errorf("jobs from the environment: exit %d, %s%s", code, out, errOut)
	}
	var out2, errOut2 bytes.Buffer
	if code := runMain(&out2, &errOut2, "cancel", ep, job); code != 0 {
		t.Errorf("cancel from the environment: exit %d, %s", code, errOut2.String())
	}
}

// weir serve refuses, before it listens, a listener beyond loopback that
// would let anyone in, unless --insecure; the message says what to give.
func TestServeRefusesOpenExposure(t *testing.T) {
	// Should serve start after all, it stops at once and the test fails.
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	serveContext = func() context.Context { return stopped }
	t.Cleanup(func() { serveContext = context.Background })
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--host=0.0.0.0"}, "the job service would listen on 0.0.0.0:0, reachable from the network, and let anyone in: give --auth-token-file"},
		{[]string{"--http-addr=0.0.0.0:0"}, "the web UI and metrics would listen on 0.0.0.0:0"},
		{[]string{"--debug-addr=:0"}, "the debug listener would listen on :0"},
		{[]string{"--tls-cert=x.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-client-ca=ca.pem"}, "--tls-client-ca needs --tls-cert"},
		{[]string{"--fn-api-host=0.0.0.0"}, "not a wildcard"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"serve", "--job-port=0", "--http-addr=", "--state-dir=" + t.TempDir()}, c.args...)
		code := runMain(&out, &errOut, args...)
		if code == 0 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want a refusal with %q", c.args, code, errOut.String(), c.want)
		}
		if strings.Contains(out.String(), "job service on") {
			t.Errorf("%v: the server started: %s", c.args, out.String())
		}
	}
}

func TestProxyFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--endpoint is required"},
		{[]string{"--endpoint=weir:8099", "--listen=0.0.0.0:8098"}, "not a loopback address"},
		{[]string{"--endpoint=weir:8099", "--token-file=/no/such/file"}, "token file"},
	} {
		var out, errOut bytes.Buffer
		t.Setenv(secure.EnvToken, "")
		if code := runMain(&out, &errOut, append([]string{"proxy"}, c.args...)...); code == 0 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, errOut.String(), c.want)
		}
	}
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// weir serve with TLS, client certificates and a token secures every
// listener: the job service, the expansion service, the UI and /metrics,
// and the debug listener; SIGHUP rotates the token.
func TestServeSecuresEveryListener(t *testing.T) {
	f := securetest.New(t)
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(cliToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	debug := freeAddr(t)
	srv := startServeWith(t, "--host=127.0.0.1", "--job-port=0", "--http-addr=127.0.0.1:0", "--expansion-port=0",
		"--debug-addr="+debug, "--state-dir="+t.TempDir(),
		"--tls-cert="+f.ServerCert, "--tls-key="+f.ServerKey, "--tls-client-ca="+f.CA, "--auth-token-file="+tokenFile)
	ctx := t.Context()

	// gRPC: the job service and the expansion service.
	grpcCode := func(addr string, c secure.Client, call func(*grpc.ClientConn) error) codes.Code {
		t.Helper()
		opts, err := c.DialOptions(addr)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := grpc.NewClient(addr, opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return status.Code(call(conn))
	}
	getJobs := func(conn *grpc.ClientConn) error {
		_, err := jobpb.NewJobServiceClient(conn).GetJobs(ctx, &jobpb.GetJobsRequest{})
		return err
	}
	expand := func(conn *grpc.ClientConn) error {
		_, err := jobpb.NewExpansionServiceClient(conn).Expand(ctx, &jobpb.ExpansionRequest{
			Transform: &pipepb.PTransform{Spec: &pipepb.FunctionSpec{Urn: "beam:transform:unknown:v1"}}})
		return err
	}
	full := secure.Client{CAFile: f.CA, CertFile: f.ClientCert, KeyFile: f.ClientKey, Token: cliToken}
	noToken := full
	noToken.Token = ""
	noCert := secure.Client{CAFile: f.CA, Token: cliToken}
	for _, l := range []struct {
		what, addr string
		call       func(*grpc.ClientConn) error
	}{{"job service", srv.job, getJobs}, {"expansion service", srv.expansion, expand}} {
		for _, c := range []struct {
			name string
			c    secure.Client
			want codes.Code
		}{{"everything", full, codes.OK}, {"no token", noToken, codes.Unauthenticated}, {"no certificate", noCert, codes.Unavailable}} {
			if got := grpcCode(l.addr, c.c, l.call); got != c.want {
				t.Errorf("%s, %s: %v, want %v", l.what, c.name, got, c.want)
			}
		}
	}

	// HTTP: the UI, /metrics and the debug listener.
	httpStatus := func(url string, withCert bool, token string) (int, error) {
		t.Helper()
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: f.ClientTLS(t, withCert)}}
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, url := range []string{"https://" + srv.http + "/metrics", "https://" + srv.http + "/api/jobs", "https://" + debug + "/debug/pprof/"} {
		if got, err := httpStatus(url, true, cliToken); got != 200 {
			t.Errorf("%s with certificate and token: %d, %v", url, got, err)
		}
		if got, err := httpStatus(url, true, ""); got != 401 {
			t.Errorf("%s without a token: %d, %v", url, got, err)
		}
		if _, err := httpStatus(url, false, cliToken); err == nil {
			t.Errorf("%s without a client certificate: no error", url)
		}
	}

	// Rotation: a new token in the file, SIGHUP, and the old one is refused.
	newToken := strings.Repeat("n", 32)
	if err := os.WriteFile(tokenFile, []byte(newToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for line := range srv.stderr {
		if strings.Contains(line, "tokens and certificates reloaded") {
			break
		}
	}
	rotated := full
	rotated.Token = newToken
	if got := grpcCode(srv.job, rotated, getJobs); got != codes.OK {
		t.Errorf("the new token after SIGHUP: %v", got)
	}
	if got := grpcCode(srv.job, full, getJobs); got != codes.Unauthenticated {
		t.Errorf("the old token after SIGHUP: %v, want Unauthenticated", got)
	}
}
