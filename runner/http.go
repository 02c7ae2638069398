package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/weir-runner/weir/jobview"
	"github.com/weir-runner/weir/secure"
	"github.com/weir-runner/weir/telemetry"
	"github.com/weir-runner/weir/webui"
)

// HTTPOptions configures a server's HTTP side.
type HTTPOptions struct {
	// Telemetry configures the exporters (OTLP); Prometheus is always on.
	Telemetry telemetry.Options
	// Logger receives errors of the HTTP server; nil means slog.Default().
	Logger *slog.Logger
	// Access is the TLS and tokens every request needs, /metrics's too
	// (package secure); nil asks for none.
	Access *secure.Policy
}

// HTTPService is a job server's HTTP side: Prometheus text at /metrics,
// and the web UI and its JSON API at / (see package webui). It reads the
// jobs' views (Job.View), the same figures the CLI reads.
type HTTPService struct {
	lis  net.Listener
	srv  *http.Server
	prov *telemetry.Provider
	done chan struct{}
}

// StartHTTP listens on addr and serves s's metrics and UI in the
// background until Stop.
func StartHTTP(ctx context.Context, s *Server, addr string, opts HTTPOptions) (*HTTPService, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	prov, err := telemetry.New(ctx, s.JobViews, opts.Telemetry)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		_ = prov.Shutdown(ctx)
		return nil, fmt.Errorf("weir: http: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", prov.Handler())
	webui.Register(mux, uiBackend{s})
	h := &HTTPService{lis: lis, prov: prov, done: make(chan struct{}),
		srv: &http.Server{Handler: recoverHTTP(log, opts.Access.Handler("http", protectFromOtherSites(mux))), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}}
	go func() {
		defer close(h.done)
		if err := h.srv.Serve(opts.Access.WrapListener(lis)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("weir: http server stopped", "addr", lis.Addr().String(), "err", err)
		}
	}()
	return h, nil
}

// protectFromOtherSites refuses the UI's actions (cancel, drain,
// savepoint: POSTs) when a browser says another site sent them: a page
// elsewhere must not act with the credentials the browser holds for this
// one (Basic credentials it prompted for, a client certificate) or with
// the reach of a browser on the server's network. Clients that are not
// browsers send neither Sec-Fetch-Site nor Origin and pass.
func protectFromOtherSites(h http.Handler) http.Handler {
	return http.NewCrossOriginProtection().Handler(h)
}

// Addr is the address the service listens on.
func (h *HTTPService) Addr() string { return h.lis.Addr().String() }

// Stop stops serving, waiting for requests in progress until ctx ends,
// and shuts the exporters down (OTLP sends what it has not).
func (h *HTTPService) Stop(ctx context.Context) error {
	err := h.srv.Shutdown(ctx)
	<-h.done
	if perr := h.prov.Shutdown(ctx); err == nil {
		err = perr
	}
	return err
}

// JobViews returns the newest sample of every job in the registry, without
// their messages: what the exporters read at each collection.
func (s *Server) JobViews() []jobview.Job {
	jobs := s.Jobs()
	out := make([]jobview.Job, len(jobs))
	for i, j := range jobs {
		out[i] = j.view(false)
	}
	return out
}
