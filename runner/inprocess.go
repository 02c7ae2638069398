package runner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"

	"github.com/weir-runner/weir/joboptions"
	"github.com/weir-runner/weir/proxy"
	"github.com/weir-runner/weir/secure"
)

func init() {
	beam.RegisterRunner("weir", Execute)
}

// inProcess is the job server that Execute starts once per process and
// reuses for every pipeline it runs.
var inProcess struct {
	sync.Mutex
	server *Server
	http   *HTTPService // serves --weir_http_addr, once set
	// proxy forwards to a secured --endpoint (secure.go); proxyAddr is
	// its address, which replaced the endpoint.
	proxy     *proxy.Proxy
	proxyAddr string
}

// Execute runs p on weir, as `--runner=weir`. Unless --endpoint names a job
// server, it starts one in this process on a free localhost port (once,
// then reuses it) and submits through Beam's universal runner; the
// environment defaults to LOOPBACK so SDK workers run inside this process.
// A server named by --endpoint that requires TLS or a token is reached
// through a proxy in this process, configured by the WEIR_TLS* and
// WEIR_TOKEN* environment variables (secure.go).
func Execute(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	if !beam.Initialized() {
		return nil, errors.New("weir: beam.Init() must be called before running a pipeline")
	}
	if err := configureInProcess(); err != nil {
		return nil, err
	}
	return universal.Execute(ctx, p)
}

// configureInProcess sets the universal runner's flags, starting the
// in-process server if no endpoint was given. The flags are globals read by
// universal.Execute, so they are written only here, under the lock, before
// any pipeline of this process reads them.
func configureInProcess() error {
	inProcess.Lock()
	defer inProcess.Unlock()
	if *jobopts.Endpoint == "" {
		// A shared root, not a temporary directory per process: this server
		// is never stopped, and each job removes its own staging directory.
		s := NewServer(NewLocalExecutor(), ServerOptions{
			StagingRoot: filepath.Join(os.TempDir(), "weir-staging"),
			Logger:      inProcessLogger(),
		})
		if err := s.Start("localhost:0"); err != nil {
			return fmt.Errorf("weir: starting in-process job server: %w", err)
		}
		inProcess.server = s
		*jobopts.Endpoint = s.Endpoint()
	} else if err := proxyEndpoint(); err != nil {
		return err
	}
	if err := serveInProcessHTTP(); err != nil {
		return err
	}
	if *jobopts.EnvironmentType == "" {
		*jobopts.EnvironmentType = "LOOPBACK"
	}
	return nil
}

// inProcessServer returns the server Execute started, if any.
func inProcessServer() *Server {
	inProcess.Lock()
	defer inProcess.Unlock()
	return inProcess.server
}

// serveInProcessHTTP serves the in-process server's metrics and UI on the
// address of --weir_http_addr, if the program set it: once, on the first
// pipeline that asks, for the life of the process, as the server itself.
// Called with inProcess held.
func serveInProcessHTTP() error {
	f := flag.CommandLine.Lookup(joboptions.HTTPAddr)
	if f == nil || f.Value.String() == "" || inProcess.server == nil || inProcess.http != nil {
		return nil
	}
	addr := f.Value.String()
	h, err := StartHTTP(context.Background(), inProcess.server, addr, HTTPOptions{})
	if err != nil {
		return fmt.Errorf("weir: --%s: %w", joboptions.HTTPAddr, err)
	}
	// The program chose the address, so it is not refused, as weir serve
	// refuses an open listener beyond loopback; but it is said, since the
	// UI shows every job's pipeline, options and messages to whoever asks.
	if e := secure.CheckExposure("web UI and metrics (--"+joboptions.HTTPAddr+")", addr, nil, true); e.Warning != "" {
		slog.Warn("weir: " + e.Warning)
	}
	inProcess.http = h
	slog.Info("weir: metrics and web UI listening", "addr", h.Addr())
	return nil
}

// inProcessLogger is the in-process server's logger: slog.Default, errors
// only. The program that runs the pipeline is the job's client too, and
// the SDK already prints the job's messages and states (a job's warnings
// are job messages as well as records): at level Info its stderr would say
// each of them twice.
func inProcessLogger() *slog.Logger {
	return slog.New(minLevel{slog.Default().Handler(), slog.LevelError})
}

// minLevel passes on the records of its handler at level min and above.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}
func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
