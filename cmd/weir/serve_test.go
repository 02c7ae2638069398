package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestServeExpansion checks the wiring of --expansion-port: the service
// answers on the address it prints.
func TestServeExpansion(t *testing.T) {
	var out bytes.Buffer
	exp, err := serveExpansion("127.0.0.1:0", nil, slog.New(slog.DiscardHandler), &out)
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Stop(context.Background())
	_, rest, ok := strings.Cut(out.String(), "expansion service on ")
	addr, _, _ := strings.Cut(rest, ";")
	if !ok || addr == "" {
		t.Fatalf("output %q does not give the address", out.String())
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err := jobpb.NewExpansionServiceClient(conn).Expand(t.Context(), &jobpb.ExpansionRequest{
		Transform: &pipepb.PTransform{Spec: &pipepb.FunctionSpec{Urn: "beam:transform:unknown:v1"}},
	})
	if err != nil {
		t.Fatalf("Expand: %v", err)
	}
	if !strings.Contains(res.GetError(), "beam:transform:unknown:v1") {
		t.Errorf("Expand error %q, want one naming the URN", res.GetError())
	}
}
