package proxy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"

	"github.com/weir-runner/weir/runner"
	"github.com/weir-runner/weir/secure"
)

// sumPipeline sums 1..100, checked by passert inside the job.
func sumPipeline() *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	in := make([]int, 100)
	for i := range in {
		in[i] = i + 1
	}
	passert.Sum(s, beam.CreateList(s, in), "sum", 100, 5050)
	return p
}

// withEndpoint points the Go SDK's --endpoint at endpoint for one test.
func withEndpoint(t *testing.T, endpoint string) {
	old := *jobopts.Endpoint
	*jobopts.Endpoint = endpoint
	t.Cleanup(func() { *jobopts.Endpoint = old })
}

// A whole Go pipeline, submitted with --runner=weir --endpoint to a server
// that requires TLS, a client certificate and a token: the in-process
// runner reads them from the environment and goes through a proxy of its
// own, since the Go SDK's universal runner can send none of them. The SDK
// worker runs in this process (LOOPBACK) and reaches the server's Fn API
// on loopback.
func TestGoPipelineThroughSecuredServer(t *testing.T) {
	beam.Init()
	access, client := secured(t)
	s := startServer(t, &runner.LocalExecutor{Parallelism: 2, StateDir: t.TempDir()}, access)
	t.Setenv(secure.EnvTLSCA, client.CAFile)
	t.Setenv(secure.EnvTLSCert, client.CertFile)
	t.Setenv(secure.EnvTLSKey, client.KeyFile)
	t.Setenv(secure.EnvToken, client.Token)
	withEndpoint(t, s.Endpoint())

	if _, err := runner.Execute(testCtx(t), sumPipeline()); err != nil {
		t.Fatalf("pipeline through the secured server: %v", err)
	}
	jobs := s.Jobs()
	if len(jobs) != 1 {
		t.Fatalf("the server ran %d jobs, want 1", len(jobs))
	}
	if st, _ := jobs[0].State(); st.String() != "DONE" {
		t.Errorf("job state %v, want DONE", st)
	}
}

// Without the environment the Go SDK reaches the server as it is:
// refused for want of a token.
func TestGoPipelineWithoutTokenIsRefused(t *testing.T) {
	beam.Init()
	toks, err := secure.TokensOf(token)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, &runner.LocalExecutor{Parallelism: 2, StateDir: t.TempDir()}, secure.NewPolicy(nil, toks, nil))
	for _, k := range []string{secure.EnvTLS, secure.EnvTLSCA, secure.EnvTLSCert, secure.EnvTLSKey, secure.EnvToken, secure.EnvTokenFile} {
		t.Setenv(k, "")
	}
	withEndpoint(t, s.Endpoint())
	_, err = runner.Execute(context.Background(), sumPipeline())
	if err == nil || !strings.Contains(err.Error(), "Unauthenticated") {
		t.Fatalf("pipeline without a token: %v, want Unauthenticated", err)
	}
	if n := len(s.Jobs()); n != 0 {
		t.Errorf("the server ran %d jobs", n)
	}
}
