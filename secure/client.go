package secure

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// The environment variables a client reads for what its flags leave
// unset: weir's CLI, `weir proxy`, and a Go pipeline run with
// --runner=weir --endpoint=HOST:PORT (which has no flags of its own for
// them, so that no secret becomes a pipeline option).
const (
	EnvTLS           = "WEIR_TLS"             // "true": TLS with the system's roots
	EnvTLSCA         = "WEIR_TLS_CA"          // PEM file of the authorities to trust
	EnvTLSCert       = "WEIR_TLS_CERT"        // client certificate (PEM)
	EnvTLSKey        = "WEIR_TLS_KEY"         // its key (PEM)
	EnvTLSServerName = "WEIR_TLS_SERVER_NAME" // name to verify instead of the endpoint's host
	EnvTokenFile     = "WEIR_TOKEN_FILE"      // file whose first token is sent
	EnvToken         = "WEIR_TOKEN"           // the token itself
)

// Client is how a client reaches a server that follows a Policy. The zero
// value dials plaintext without a token, as before any of this existed.
type Client struct {
	// TLS dials with TLS; implied by CAFile, CertFile and KeyFile. Without
	// CAFile the system's roots verify the server.
	TLS bool
	// CAFile holds the authorities that sign the server's certificate.
	CAFile string
	// CertFile and KeyFile are the client certificate a server with a
	// client CA asks for.
	CertFile, KeyFile string
	// ServerName is the name the server's certificate must carry, when it
	// is not the endpoint's host (a server dialled by IP, say).
	ServerName string
	// TokenFile's first token (ReadToken), or Token, is sent with every
	// request; TokenFile wins when both are set.
	TokenFile, Token string
}

// WithEnv fills the fields c leaves empty from the environment (the Env
// constants), read through getenv (os.Getenv).
func (c Client) WithEnv(getenv func(string) string) (Client, error) {
	for _, f := range []struct {
		field *string
		env   string
	}{{&c.CAFile, EnvTLSCA}, {&c.CertFile, EnvTLSCert}, {&c.KeyFile, EnvTLSKey},
		{&c.ServerName, EnvTLSServerName}, {&c.TokenFile, EnvTokenFile}, {&c.Token, EnvToken}} {
		if *f.field == "" {
			*f.field = getenv(f.env)
		}
	}
	if v := getenv(EnvTLS); !c.TLS && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("secure: $%s=%q: want true or false", EnvTLS, v)
		}
		c.TLS = b
	}
	return c, nil
}

// Configured reports whether c asks for anything but plaintext without a
// token.
func (c Client) Configured() bool {
	return c.usesTLS() || c.TokenFile != "" || c.Token != ""
}

func (c Client) usesTLS() bool {
	return c.TLS || c.CAFile != "" || c.CertFile != "" || c.KeyFile != ""
}

// DialOptions are the grpc.NewClient options that reach endpoint as c
// says. A token goes only over TLS, or in plaintext to a loopback
// endpoint: sent in clear over a network, anyone on the path could use it.
func (c Client) DialOptions(endpoint string) ([]grpc.DialOption, error) {
	creds := insecure.NewCredentials()
	if c.usesTLS() {
		cfg, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(cfg)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	tok := c.Token
	if c.TokenFile != "" {
		var err error
		if tok, err = ReadToken(c.TokenFile); err != nil {
			return nil, err
		}
	}
	if tok == "" {
		return opts, nil
	}
	if !c.usesTLS() && !IsLoopback(endpoint) {
		return nil, fmt.Errorf("secure: %s is not a loopback address: a token is sent to it only over TLS (give a CA file, or TLS with the system's roots)", endpoint)
	}
	return append(opts, grpc.WithPerRPCCredentials(bearerCreds{token: tok, secure: c.usesTLS()})), nil
}

// TLSConfig is the client's TLS configuration, nil when it dials
// plaintext: for HTTP clients of a server's UI and metrics.
func (c Client) TLSConfig() (*tls.Config, error) {
	if !c.usesTLS() {
		return nil, nil
	}
	return c.tlsConfig()
}

func (c Client) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CAFile != "" {
		pool, err := loadPool(c.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, fmt.Errorf("secure: a client certificate needs both its certificate and its key file")
	}
	if c.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("secure: client certificate %s, key %s: %w", c.CertFile, c.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// bearerCreds sends the token as "authorization: Bearer <token>".
type bearerCreds struct {
	token  string
	secure bool
}

func (b bearerCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{AuthorizationKey: "Bearer " + b.token}, nil
}

// RequireTransportSecurity is true over TLS, so gRPC itself refuses to
// send the token should the connection not be secure.
func (b bearerCreds) RequireTransportSecurity() bool { return b.secure }

// IsLoopback reports whether addr (host or host:port) names this machine
// only: localhost or a loopback IP. An empty host (":8099") and the
// unspecified addresses (0.0.0.0, ::) listen on every interface; any other
// name is taken as reachable from the network, since what it resolves to
// may change.
func IsLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
