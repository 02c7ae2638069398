package runner

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/secure"
)

const accessToken = "0123456789abcdef0123456789abcdef"

func tokenPolicy(t *testing.T) *secure.Policy {
	t.Helper()
	toks, err := secure.TokensOf(accessToken)
	if err != nil {
		t.Fatal(err)
	}
	return secure.NewPolicy(nil, toks, slog.New(slog.DiscardHandler))
}

// Every service of the job server checks the token before anything runs:
// Beam's JobService (unary and streams), artifact staging, and weir's
// own savepoint and jobs services.
func TestJobServiceRequiresToken(t *testing.T) {
	ts := startServer(t, ExecutorFunc(func(context.Context, *Job) error { return nil }),
		ServerOptions{Access: tokenPolicy(t)})
	ctx := testCtx(t)
	bearer := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	calls := map[string]func(context.Context) error{
		"Prepare": func(ctx context.Context) error {
			_, err := ts.client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: &pipepb.Pipeline{}, JobName: "x"})
			return err
		},
		"GetJobs": func(ctx context.Context) error { _, err := ts.client.GetJobs(ctx, &jobpb.GetJobsRequest{}); return err },
		"GetMessageStream": func(ctx context.Context) error {
			st, err := ts.client.GetMessageStream(ctx, &jobpb.JobMessagesRequest{JobId: "none"})
			if err == nil {
				_, err = st.Recv()
			}
			return err
		},
		"ReverseArtifactRetrievalService": func(ctx context.Context) error {
			st, err := jobpb.NewArtifactStagingServiceClient(ts.conn).ReverseArtifactRetrievalService(ctx)
			if err == nil {
				_, err = st.Recv()
			}
			return err
		},
		"weir Jobs": func(ctx context.Context) error {
			return ts.conn.Invoke(ctx, "/"+jobsDesc.ServiceName+"/"+jobsDesc.Methods[0].MethodName, &structpb.Struct{}, &structpb.Struct{})
		},
	}
	for name, call := range calls {
		for _, c := range []struct {
			what string
			ctx  context.Context
		}{{"no token", ctx}, {"wrong token", bearer(strings.Repeat("z", 32))}} {
			if err := call(c.ctx); status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s, %s: %v, want Unauthenticated", name, c.what, err)
			}
		}
	}
	if _, err := ts.client.Prepare(bearer(accessToken), &jobpb.PrepareJobRequest{Pipeline: &pipepb.Pipeline{}, JobName: "x"}); err != nil {
		t.Errorf("Prepare with the token: %v", err)
	}
}

// The HTTP side asks the same token of the UI, its API and /metrics, and
// refuses the UI's actions sent by another site's page.
func TestHTTPRequiresToken(t *testing.T) {
	ts := startServer(t, ExecutorFunc(func(context.Context, *Job) error { return nil }), ServerOptions{})
	web, err := StartHTTP(t.Context(), ts.s, "127.0.0.1:0", HTTPOptions{Access: tokenPolicy(t), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Stop(context.Background()) })
	get := func(method, path string, hdr map[string]string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, "http://"+web.Addr()+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	auth := map[string]string{"Authorization": "Bearer " + accessToken}
	for _, path := range []string{"/metrics", "/", "/api/jobs"} {
		if got := get("GET", path, nil); got != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d, want 401", path, got)
		}
		if got := get("GET", path, auth); got != http.StatusOK {
			t.Errorf("GET %s with the token: %d, want 200", path, got)
		}
	}
	// A job that does not exist answers 404 when the action goes through;
	// a page of another site is refused before.
	if got := get("POST", "/api/jobs/nope/cancel", auth); got != http.StatusNotFound {
		t.Errorf("cancel with the token: %d, want 404", got)
	}
	crossSite := map[string]string{"Authorization": "Bearer " + accessToken, "Sec-Fetch-Site": "cross-site"}
	if got := get("POST", "/api/jobs/nope/cancel", crossSite); got != http.StatusForbidden {
		t.Errorf("cancel sent by another site: %d, want 403", got)
	}
}
