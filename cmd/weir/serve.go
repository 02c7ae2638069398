package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/weir-runner/weir/expansion"
	"github.com/weir-runner/weir/joboptions"
	"github.com/weir-runner/weir/runner"
	"github.com/weir-runner/weir/secure"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/telemetry"
)

// serve runs the job service until SIGINT or SIGTERM, then stops it
// gracefully: running jobs are cancelled and waited for, up to
// --shutdown-timeout. A second signal during shutdown kills the process.
func serve(args []string, stdout io.Writer) error {
	fs := newFlagSet("serve", "")
	host := fs.String("host", "localhost", "interface to listen on; use 0.0.0.0 to accept remote submissions")
	port := fs.Int("job-port", 8099, "port of Beam's JobService (0 picks a free port)")
	stagingDir := fs.String("staging-dir", "", "directory for staged artifacts (default: a temporary directory)")
	keep := fs.Bool("keep-artifacts", false, "keep each job's staged artifacts after it ends")
	timeout := fs.Duration("shutdown-timeout", 30*time.Second, "how long to wait for running jobs on shutdown")
	expPort := fs.Int("expansion-port", -1, "port of an expansion service for Beam's kafkaio transforms (0 picks a free port; -1 serves none)")
	lift := fs.Bool("combine-lifting", true, "run combines lifted (precombine before the shuffle) unless a job's --weir_combine_lifting says otherwise")
	unlift := fs.Bool("adaptive-unlift", true, "run a lifted combine unlifted where its first bundle finds keys that do not repeat, unless a job's --weir_adaptive_unlift says otherwise")
	adaptive := fs.Bool("adaptive-precombine", true, "convert inputs to accumulators one by one where a lifted combine's precombine does not reduce them, unless a job's --weir_adaptive_precombine says otherwise")
	stream := fs.String("stream-bundle-output", "auto", "on: bundles' output goes downstream as the SDK sends it; off: when they end; auto: on for jobs that take checkpoints; for jobs whose --weir_stream_bundle_output is auto")
	shuffleMem := fs.Int64("shuffle-memory", 64<<20, "bytes each job's shuffles may keep in memory before they spill to its state store (Pebble); a bounded input whose groups fit fires them without writing them; negative keeps none")
	stateDir := fs.String("state-dir", "", "folder for what outlives a job, such as checkpoints under jobs/<job name>/checkpoints, which a job submitted again under its name resumes from (default: weir in the temporary directory)")
	resume := fs.Bool("resume-jobs", true, "with --state-dir: keep a record of each running job and start again those that were running when the last server on that folder stopped (named jobs with checkpoints whose workers weir starts); they resume from their checkpoints")
	debugAddr := fs.String("debug-addr", "", "if set, serve Go's net/http/pprof profiles on this address (e.g. localhost:6060)")
	var lf logFlags // logging.go
	lf.register(fs)
	var cf confineFlags // confine.go
	cf.register(fs)
	var sf serverSecurityFlags // security.go
	sf.register(fs)
	retention := fs.Duration("job-retention", time.Hour, "how long an ended job stays listed and queryable (as Flink's jobstore.expiration-time); 0 keeps every job")
	httpAddr := fs.String("http-addr", defaultHTTPAddr, "serve Prometheus /metrics and the web UI on this address (empty: none; the default is skipped with a warning when its port is taken)")
	metricsOn := fs.Bool("metrics", true, "count what each subtask does (elements, bytes, busy/idle/backpressured time, watermarks) and sample it for /metrics, the UI and the CLI; false is for measuring what that costs")
	otlp := fs.String("otlp-endpoint", "", "push metrics to this OTLP/gRPC collector (host:port, or http://host:port without TLS)")
	otlpEvery := fs.Duration("otlp-interval", 10*time.Second, "how often metrics are pushed to --otlp-endpoint")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageErrorf("unexpected arguments %q", fs.Args())
	}
	if *retention < 0 {
		return usageErrorf("--job-retention %v: want zero (keep every job) or more", *retention)
	}
	switch *stream {
	case joboptions.StreamAuto, joboptions.StreamOn, joboptions.StreamOff:
	default:
		return usageErrorf("--stream-bundle-output %q: want auto, on or off", *stream)
	}
	confinement, err := cf.confinement(*stateDir)
	if err != nil {
		return err
	}

	log := lf.logger(os.Stderr)
	access, err := sf.policy(log)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(*host, strconv.Itoa(*port))
	expAddr := net.JoinHostPort(*host, strconv.Itoa(*expPort))
	if *expPort < 0 {
		expAddr = ""
	}
	if err := sf.checkListeners(access, log, map[string]string{"job service": addr, "expansion service": expAddr,
		"web UI and metrics": *httpAddr, "debug listener": *debugAddr}); err != nil {
		return err
	}
	if *debugAddr != "" {
		dl, err := net.Listen("tcp", *debugAddr)
		if err != nil {
			return fmt.Errorf("debug listener on %s: %w", *debugAddr, err)
		}
		defer dl.Close()
		// DefaultServeMux carries net/http/pprof.
		go func() {
			_ = http.Serve(access.WrapListener(dl), access.Handler("debug listener", http.DefaultServeMux))
		}()
		log.Info("weir: profiles served", "addr", dl.Addr().String(), "access", access.String())
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	var exp *expansion.Server
	if *expPort >= 0 {
		exp, err = serveExpansion(expAddr, access, log, stdout)
		if err != nil {
			lis.Close()
			return err
		}
	}
	stopReload := reloadOnHangup(access, log)
	defer stopReload()
	opts := runner.ServerOptions{StagingRoot: *stagingDir, KeepArtifacts: *keep, Logger: log, JobRetention: *retention,
		Confinement: confinement, Access: access}
	if *resume && *stateDir != "" {
		// Only a folder given on purpose: the default, in the temporary
		// directory, is shared by every server on the machine, and two
		// servers must not both resume one job.
		opts.StateDir = *stateDir
	}
	s := runner.NewServer(&runner.LocalExecutor{NoLift: !*lift, FixedPrecombine: !*adaptive, NoUnlift: !*unlift, StateDir: *stateDir,
		NoMetrics: !*metricsOn, FnAPIHost: sf.fnAPIHost, StreamBundleOutput: *stream,
		Store: state.Options{ShuffleMemory: *shuffleMem}}, opts)

	ctx, stopSignals := signal.NotifyContext(serveContext(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	web, err := serveHTTP(ctx, s, *httpAddr, runner.HTTPOptions{Logger: log, Access: access,
		Telemetry: telemetry.Options{OTLPEndpoint: *otlp, OTLPInterval: *otlpEvery}}, log, stdout)
	if err != nil {
		lis.Close()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	log.Info("weir: job service listening", "endpoint", lis.Addr().String(), "access", access.String())
	sf.logFnAPI(log)
	fmt.Fprintf(stdout, "weir job service on %s; submit with --runner=universal --endpoint=%s --environment_type=LOOPBACK\n", lis.Addr(), lis.Addr())
	if opts.StateDir != "" {
		ids, err := s.ResumeJobs()
		if err != nil {
			// A record that cannot be read stays for a look; the rest run.
			log.Error("weir: resuming jobs", "err", err)
		}
		for _, id := range ids {
			fmt.Fprintf(stdout, "resumed job %s\n", id)
		}
	}

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Restore default signal handling, so a second signal ends the process.
	stopSignals()
	log.Info("weir: shutting down", "timeout", *timeout)
	sctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	err = s.Stop(sctx)
	if web != nil {
		if werr := web.Stop(sctx); err == nil {
			err = werr
		}
	}
	if exp != nil {
		if eerr := exp.Stop(sctx); err == nil {
			err = eerr
		}
	}
	if serr := <-served; !errors.Is(serr, runner.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// serveContext is the context serve runs in until a signal: a test that
// expects serve to refuse its flags ends it at once should it start.
var serveContext = context.Background

// serveExpansion serves weir's expansion service on addr in the
// background, with the server's access policy.
func serveExpansion(addr string, access *secure.Policy, log *slog.Logger, stdout io.Writer) (*expansion.Server, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("expansion service: listen on %s: %w", addr, err)
	}
	exp := expansion.NewServer(expansion.NewService(expansion.Options{Logger: log}), access.GRPCServerOptions("expansion service")...)
	go func() {
		if err := exp.Serve(lis); err != nil {
			log.Error("weir: expansion service stopped serving", "err", err)
		}
	}()
	log.Info("weir: expansion service listening", "endpoint", lis.Addr().String(), "access", access.String())
	fmt.Fprintf(stdout, "weir expansion service on %s; give it to Beam's kafkaio as the expansion address\n", lis.Addr())
	return exp, nil
}

// defaultHTTPAddr is where weir serve's metrics and UI are unless told
// otherwise: Flink's web UI port.
const defaultHTTPAddr = "localhost:8081"

// serveHTTP starts the metrics and UI listener on addr; none for "". The
// default address is skipped with a warning when its port is taken (a
// second server on the machine); an address given on purpose must work.
func serveHTTP(ctx context.Context, s *runner.Server, addr string, opts runner.HTTPOptions, log *slog.Logger, stdout io.Writer) (*runner.HTTPService, error) {
	if addr == "" {
		return nil, nil
	}
	web, err := runner.StartHTTP(ctx, s, addr, opts)
	if err != nil {
		if addr == defaultHTTPAddr && errors.Is(err, syscall.EADDRINUSE) {
			log.Warn("weir: metrics and web UI not served: the default address is taken; give --http-addr", "addr", addr, "err", err)
			return nil, nil
		}
		return nil, err
	}
	log.Info("weir: metrics and web UI listening", "addr", web.Addr(), "access", opts.Access.String())
	scheme := "http"
	if opts.Access.Encrypts() {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "weir web UI on %s://%s/, Prometheus metrics on %s://%s/metrics\n", scheme, web.Addr(), scheme, web.Addr())
	return web, nil
}
