package runner

import (
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"

	"github.com/weir-runner/weir/proxy"
	"github.com/weir-runner/weir/secure"
)

// proxyEndpoint puts a proxy (package proxy) between the universal runner
// and the server of --endpoint when the environment asks for TLS or a
// token: the Go SDK dials job services in plaintext and sends no token.
// The environment, and not flags, carries them, since the Go SDK sends
// every flag set to the job service as a pipeline option. The proxy
// listens on a free loopback port for the life of the process, as the
// in-process server does, and replaces --endpoint. Called with inProcess
// held.
func proxyEndpoint() error {
	if inProcess.proxy != nil && *jobopts.Endpoint == inProcess.proxyAddr {
		return nil // a later pipeline of this process
	}
	client, err := secure.Client{}.WithEnv(os.Getenv)
	if err != nil {
		return fmt.Errorf("weir: --endpoint=%s: %w", *jobopts.Endpoint, err)
	}
	if !client.Configured() {
		return nil
	}
	conn, err := proxy.Dial(*jobopts.Endpoint, client)
	if err != nil {
		return fmt.Errorf("weir: --endpoint=%s: %w", *jobopts.Endpoint, err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		conn.Close()
		return fmt.Errorf("weir: proxy to %s: %w", *jobopts.Endpoint, err)
	}
	p := proxy.New(proxy.Options{Job: conn, Logger: inProcessLogger()})
	go func() {
		if err := p.Serve(lis); err != nil {
			slog.Error("weir: proxy to the job service stopped", "endpoint", conn.Target(), "err", err)
		}
	}()
	inProcess.proxy, inProcess.proxyAddr = p, lis.Addr().String()
	*jobopts.Endpoint = inProcess.proxyAddr
	return nil
}
