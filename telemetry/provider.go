package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/weir-runner/weir/jobview"
)

// Options configures a Provider. The zero value serves Prometheus only.
type Options struct {
	// OTLPEndpoint, if set, is an OTLP/gRPC collector (host:port, or
	// http://host:port for one without TLS) that metrics are pushed to
	// every OTLPInterval (default 10 s).
	OTLPEndpoint string
	OTLPInterval time.Duration
	// ServiceName names this server in OTLP's resource (default "weir").
	ServiceName string
}

// Provider is the server's meter provider and its exporters.
type Provider struct {
	mp      *sdkmetric.MeterProvider
	handler http.Handler
}

// New returns a provider whose instruments observe the samples jobs
// returns at each collection. jobs is called from the exporters'
// goroutines and must be safe for that.
func New(ctx context.Context, jobs func() []jobview.Job, opts Options) (*Provider, error) {
	if opts.ServiceName == "" {
		opts.ServiceName = "weir"
	}
	reg := prometheus.NewRegistry()
	// The process's own figures (memory, goroutines, open files) beside
	// the jobs': an operator needs both on one scrape.
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	prom, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", opts.ServiceName))
	mopts := []sdkmetric.Option{sdkmetric.WithReader(prom), sdkmetric.WithResource(res)}
	if opts.OTLPEndpoint != "" {
		exp, err := otlpExporter(ctx, opts.OTLPEndpoint)
		if err != nil {
			return nil, err
		}
		every := opts.OTLPInterval
		if every <= 0 {
			every = 10 * time.Second
		}
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(every))))
	}
	mp := sdkmetric.NewMeterProvider(mopts...)
	if err := register(mp.Meter("github.com/weir-runner/weir"), jobs); err != nil {
		_ = mp.Shutdown(ctx)
		return nil, err
	}
	return &Provider{mp: mp, handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})}, nil
}

func otlpExporter(ctx context.Context, endpoint string) (sdkmetric.Exporter, error) {
	opts := []otlpmetricgrpc.Option{}
	switch {
	case strings.HasPrefix(endpoint, "http://"):
		opts = append(opts, otlpmetricgrpc.WithEndpoint(strings.TrimPrefix(endpoint, "http://")), otlpmetricgrpc.WithInsecure())
	case strings.HasPrefix(endpoint, "https://"):
		opts = append(opts, otlpmetricgrpc.WithEndpoint(strings.TrimPrefix(endpoint, "https://")))
	default:
		opts = append(opts, otlpmetricgrpc.WithEndpoint(endpoint))
	}
	exp, err := otlpmetricgrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter for %s: %w", endpoint, err)
	}
	return exp, nil
}

// Handler serves the Prometheus text format.
func (p *Provider) Handler() http.Handler { return p.handler }

// Shutdown pushes what the OTLP exporter has not sent and stops the
// provider; later collections observe nothing.
func (p *Provider) Shutdown(ctx context.Context) error {
	if err := p.mp.Shutdown(ctx); err != nil && !errors.Is(err, sdkmetric.ErrReaderShutdown) {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}
