package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"

	"github.com/weir-runner/weir/proxy"
	"github.com/weir-runner/weir/secure"
)

// defaultProxyAddr is where weir proxy listens unless told otherwise: next
// to the job service's default port, on loopback.
const defaultProxyAddr = "localhost:8098"

// runProxy is `weir proxy`: it forwards the plaintext, token-less calls of
// Beam's SDK clients on loopback to a weir serve that requires TLS, client
// certificates or a token (package proxy), until SIGINT or SIGTERM.
func runProxy(args []string, stdout io.Writer) error {
	fs := newFlagSet("proxy", "")
	listen := fs.String("listen", defaultProxyAddr, "address the proxy listens on, without TLS or token: keep it on loopback")
	endpoint := fs.String("endpoint", "", "the weir serve job service to forward to (host:port); required")
	expEndpoint := fs.String("expansion-endpoint", "", "the weir serve expansion service to forward ExpansionService calls to (default: none)")
	insecureListen := fs.Bool("insecure", false, "let --listen be an address beyond loopback: whoever reaches it acts with the proxy's token and certificate")
	var lf logFlags
	lf.register(fs)
	var sec clientSecurityFlags
	sec.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageErrorf("unexpected arguments %q", fs.Args())
	}
	if *endpoint == "" {
		return usageErrorf("--endpoint is required: the weir serve to forward to")
	}
	if !secure.IsLoopback(*listen) && !*insecureListen {
		return usageErrorf("--listen=%s is not a loopback address: the proxy adds its token and certificate to whatever reaches it; keep it on localhost, or give --insecure", *listen)
	}
	client, err := sec.client()
	if err != nil {
		return err
	}
	log := lf.logger(os.Stderr)
	job, err := proxy.Dial(*endpoint, client)
	if err != nil {
		return err
	}
	defer job.Close()
	opts := proxy.Options{Job: job, Logger: log}
	if *expEndpoint != "" {
		exp, err := proxy.Dial(*expEndpoint, client)
		if err != nil {
			return err
		}
		defer exp.Close()
		opts.Expansion = exp
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	p := proxy.New(opts)
	served := make(chan error, 1)
	go func() { served <- p.Serve(lis) }()
	log.Info("weir: proxy listening", "addr", lis.Addr().String(), "endpoint", *endpoint, "expansion_endpoint", *expEndpoint)
	fmt.Fprintf(stdout, "weir proxy on %s, forwarding to %s; submit with --endpoint=%s (Python: --job_endpoint, Java: --jobEndpoint)\n",
		lis.Addr(), *endpoint, lis.Addr())
	if *expEndpoint != "" {
		fmt.Fprintf(stdout, "expansion service on %s too, forwarding to %s\n", lis.Addr(), *expEndpoint)
	}
	checkUpstream(job, *endpoint, log.Warn)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stop()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = p.Stop(sctx)
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}

// checkUpstream asks the job service for its jobs once, so that a wrong
// token, certificate or address shows at start and not at the first
// submission. A failure is only reported: the server may come up later.
func checkUpstream(conn *grpc.ClientConn, endpoint string, warn func(string, ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := jobpb.NewJobServiceClient(conn).GetJobs(ctx, &jobpb.GetJobsRequest{}); err != nil && !errors.Is(err, context.Canceled) {
		warn("weir: proxy: the job service does not answer as it should; calls will fail until it does", "endpoint", endpoint, "err", err)
	}
}
