// Package secure is weir's transport security and authentication: the TLS
// and bearer tokens a server's listeners require (Policy), and how a
// client reaches them (Client).
//
// # Servers
//
// A server makes one Policy from its flags and hands it to each listener:
//
//	tlsCfg, _ := secure.LoadServerTLS(secure.ServerTLSFiles{Cert: c, Key: k, ClientCA: ca}) // or nil
//	tokens, _ := secure.LoadTokens(path)                                                      // or nil
//	p := secure.NewPolicy(tlsCfg, tokens, logger)
//	if e := secure.CheckExposure("job service", addr, p, insecure); e.Refuse != nil { ... }
//	grpc.NewServer(append(opts, p.GRPCServerOptions("job service")...)...)
//	httpSrv.Handler = p.Handler("http", mux); httpSrv.Serve(p.WrapListener(lis))
//	on SIGHUP: p.Reload()   // new tokens, renewed certificates; connections stay
//
// gRPC requests without a valid "authorization: Bearer <token>" are
// answered codes.Unauthenticated by interceptors (unary and stream) before
// any handler; HTTP requests 401 with WWW-Authenticate: Bearer (and Basic,
// whose password is the token, for browsers). Tokens are compared by their
// SHA-256 digests in constant time, against every token of the file, so
// that rotation is adding a line. With a client CA the TLS handshake
// itself refuses a client without a certificate that CA signed. Refusals
// are logged, sampled to a line a minute.
//
// CheckExposure is the startup rule: a listener reachable from the network
// must authenticate (token or client certificates) unless the operator
// says --insecure.
//
// # Clients
//
// A Client (flags, or the WEIR_* environment variables through WithEnv)
// gives the grpc.NewClient options: TLS with a CA file or the system
// roots, a client certificate, and the token as per-RPC credentials, which
// go in plaintext only to a loopback endpoint.
//
// Beam's own SDK clients can do none of this to a job service (see
// docs/security.md); package proxy forwards their plaintext, loopback
// traffic to a secured server with a Client's options.
package secure
