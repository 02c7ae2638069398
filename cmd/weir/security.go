package main

import (
	"flag"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/secure"
)

// serverSecurityFlags are weir serve's flags of transport security and
// authentication (docs/security.md). They apply to every listener: the job
// service (with artifact staging), the expansion service, the HTTP UI and
// metrics, and the debug listener.
type serverSecurityFlags struct {
	tlsCert, tlsKey, tlsClientCA string
	tokenFile                    string
	insecure                     bool
	fnAPIHost                    string
}

func (s *serverSecurityFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.tlsCert, "tls-cert", "", "serve every listener with TLS, with this certificate (PEM; with --tls-key); SIGHUP reads it again")
	fs.StringVar(&s.tlsKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	fs.StringVar(&s.tlsClientCA, "tls-client-ca", "", "require client certificates signed by the authorities in this PEM file (needs --tls-cert)")
	fs.StringVar(&s.tokenFile, "auth-token-file", "", "require a bearer token from this file (one a line, several while rotating; SIGHUP reads it again) on every request, /metrics included")
	fs.BoolVar(&s.insecure, "insecure", false, "let a listener that is not on loopback serve without a token or client certificates (a trusted network, a mesh that authenticates); without it weir serve refuses to start so")
	fs.StringVar(&s.fnAPIHost, "fn-api-host", fnapi.DefaultHost, "address the Fn API of each job listens on and SDK workers dial (no TLS nor token: Beam's harnesses cannot); set it to an address of this machine that EXTERNAL workers elsewhere can reach")
}

// policy is what the flags ask of clients; nil asks nothing.
func (s *serverSecurityFlags) policy(log *slog.Logger) (*secure.Policy, error) {
	if (s.tlsCert == "") != (s.tlsKey == "") {
		return nil, usageErrorf("--tls-cert and --tls-key go together")
	}
	if s.tlsClientCA != "" && s.tlsCert == "" {
		return nil, usageErrorf("--tls-client-ca needs --tls-cert and --tls-key: client certificates are part of TLS")
	}
	if ip := net.ParseIP(s.fnAPIHost); s.fnAPIHost == "" || (ip != nil && ip.IsUnspecified()) {
		return nil, usageErrorf("--fn-api-host=%q: want an address SDK workers can dial (it is the host of the endpoint they are given), not a wildcard", s.fnAPIHost)
	}
	if s.tlsCert == "" && s.tokenFile == "" {
		return nil, nil
	}
	var tlsCfg *secure.ServerTLS
	if s.tlsCert != "" {
		var err error
		tlsCfg, err = secure.LoadServerTLS(secure.ServerTLSFiles{Cert: s.tlsCert, Key: s.tlsKey, ClientCA: s.tlsClientCA})
		if err != nil {
			return nil, err
		}
	}
	var tokens *secure.Tokens
	if s.tokenFile != "" {
		var err error
		if tokens, err = secure.LoadTokens(s.tokenFile); err != nil {
			return nil, err
		}
	}
	return secure.NewPolicy(tlsCfg, tokens, log), nil
}

// checkListeners applies secure.CheckExposure to each listener (name to
// address; "" is not served), in a fixed order: the first refusal is
// returned, warnings are logged.
func (s *serverSecurityFlags) checkListeners(p *secure.Policy, log *slog.Logger, listeners map[string]string) error {
	for _, what := range slices.Sorted(maps.Keys(listeners)) {
		addr := listeners[what]
		if addr == "" {
			continue
		}
		e := secure.CheckExposure(what, addr, p, s.insecure)
		if e.Refuse != nil {
			return e.Refuse
		}
		if e.Warning != "" {
			log.Warn("weir: " + e.Warning)
		}
	}
	return nil
}

// logFnAPI says where the Fn API listens, once, at start.
func (s *serverSecurityFlags) logFnAPI(log *slog.Logger) {
	if secure.IsLoopback(s.fnAPIHost) {
		log.Info("weir: Fn API for SDK workers listens on loopback, a port per job, plaintext without authentication; --fn-api-host to change",
			"host", s.fnAPIHost)
		return
	}
	log.Warn("weir: Fn API for SDK workers listens beyond loopback, a port per job, plaintext without authentication: only workers' networks should reach it",
		"host", s.fnAPIHost)
}

// reloadOnHangup reads the token file and certificates again on each
// SIGHUP until stop is called.
func reloadOnHangup(p *secure.Policy, log *slog.Logger) (stop func()) {
	if p == nil {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range hup {
			if err := p.Reload(); err != nil {
				log.Error("weir: SIGHUP: reloading tokens and certificates; the old ones stay in use", "err", err)
				continue
			}
			log.Info("weir: SIGHUP: tokens and certificates reloaded")
		}
	}()
	return func() {
		signal.Stop(hup)
		close(hup)
		<-done
	}
}

// clientSecurityFlags are the flags of a client of weir serve: the CLI's
// commands and weir proxy's upstream. Unset ones are read from the WEIR_*
// environment variables (secure.Client.WithEnv).
type clientSecurityFlags struct {
	c secure.Client
}

func (c *clientSecurityFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.c.TLS, "tls", false, "dial with TLS, verifying the server with the system's roots; implied by --tls-ca and --tls-cert ($"+secure.EnvTLS+")")
	fs.StringVar(&c.c.CAFile, "tls-ca", "", "dial with TLS, trusting the authorities in this PEM file ($"+secure.EnvTLSCA+")")
	fs.StringVar(&c.c.CertFile, "tls-cert", "", "client certificate (PEM) for a server with --tls-client-ca; with --tls-key ($"+secure.EnvTLSCert+")")
	fs.StringVar(&c.c.KeyFile, "tls-key", "", "the private key of --tls-cert ($"+secure.EnvTLSKey+")")
	fs.StringVar(&c.c.ServerName, "tls-server-name", "", "name the server's certificate must carry, if not the endpoint's host ($"+secure.EnvTLSServerName+")")
	fs.StringVar(&c.c.TokenFile, "token-file", "", "send the first token of this file as a bearer token ($"+secure.EnvTokenFile+", or the token itself in $"+secure.EnvToken+")")
}

// client is the flags, completed from the environment.
func (c *clientSecurityFlags) client() (secure.Client, error) {
	cl, err := c.c.WithEnv(os.Getenv)
	if err != nil {
		return cl, usageErrorf("%v", err)
	}
	return cl, nil
}
