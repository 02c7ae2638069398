package telemetry

import (
	"context"
	"net"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"

	"github.com/weir-runner/weir/jobview"
)

// collector is an OTLP/gRPC metrics endpoint that hands over what it gets.
type collector struct {
	colmetricpb.UnimplementedMetricsServiceServer
	got chan *colmetricpb.ExportMetricsServiceRequest
}

func (c *collector) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	select {
	case c.got <- req:
	default:
	}
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// TestOTLPPushesTheCatalog checks that --otlp-endpoint pushes weir's
// metrics, with the job's labels and the service's name, to a collector.
func TestOTLPPushesTheCatalog(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{got: make(chan *colmetricpb.ExportMetricsServiceRequest, 1)}
	srv := grpc.NewServer()
	colmetricpb.RegisterMetricsServiceServer(srv, c)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	job := sampleJob(1_000_000, 5)
	p, err := New(context.Background(), func() []jobview.Job { return []jobview.Job{job} },
		Options{OTLPEndpoint: "http://" + lis.Addr().String(), OTLPInterval: 50 * time.Millisecond, ServiceName: "weir-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())

	var req *colmetricpb.ExportMetricsServiceRequest
	select {
	case req = <-c.got:
	case <-time.After(time.Minute):
		t.Fatal("the collector got nothing")
	}
	names := map[string]bool{}
	service := ""
	for _, rm := range req.GetResourceMetrics() {
		for _, a := range rm.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				names[m.GetName()] = true
				if m.GetName() != "weir.kafka.consumer.lag" {
					continue
				}
				pts := m.GetGauge().GetDataPoints()
				if len(pts) != 1 || pts[0].GetAsDouble() != 5 {
					t.Errorf("weir.kafka.consumer.lag points %v, want one of 5", pts)
				}
				labels := map[string]string{}
				for _, a := range pts[0].GetAttributes() {
					labels[a.GetKey()] = a.GetValue().GetStringValue()
				}
				if labels["job"] != "job-1" || labels["messaging.destination.name"] != "in" {
					t.Errorf("labels %v", labels)
				}
			}
		}
	}
	if service != "weir-test" {
		t.Errorf("service.name %q", service)
	}
	for _, c := range Catalog {
		if !names[c.Name] && c.Name != "weir.user.gauge" { // the sample job has no gauge
			t.Errorf("%s not pushed", c.Name)
		}
	}
}
