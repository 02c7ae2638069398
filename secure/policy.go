package secure

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Policy is what a server's listeners ask of their clients: TLS (with or
// without client certificates) and a bearer token, each optional. When
// both a client CA and tokens are set, a client needs both. A nil *Policy
// asks nothing: plaintext, no authentication, which is what the in-process
// runner and embedded servers keep.
type Policy struct {
	// TLS, if set, encrypts every connection (and, with a client CA,
	// requires a client certificate).
	TLS *ServerTLS
	// Tokens, if set, are the bearer tokens every request must carry.
	Tokens *Tokens

	refused *refusalLog
}

// NewPolicy returns a policy; log receives refused requests (sampled: at
// most one line a minute, with a count of the rest). Nil means
// slog.Default().
func NewPolicy(tls *ServerTLS, tokens *Tokens, log *slog.Logger) *Policy {
	if log == nil {
		log = slog.Default()
	}
	return &Policy{TLS: tls, Tokens: tokens, refused: newRefusalLog(log, nil)}
}

// Authenticates reports whether clients must prove who they are, by a
// token or a client certificate.
func (p *Policy) Authenticates() bool {
	return p != nil && (p.Tokens != nil || (p.TLS != nil && p.TLS.RequiresClientCert()))
}

// Encrypts reports whether connections use TLS.
func (p *Policy) Encrypts() bool { return p != nil && p.TLS != nil }

// String says what the policy asks, for log lines.
func (p *Policy) String() string {
	var parts []string
	switch {
	case p.Encrypts() && p.TLS.RequiresClientCert():
		parts = append(parts, "TLS with client certificates")
	case p.Encrypts():
		parts = append(parts, "TLS")
	default:
		parts = append(parts, "plaintext")
	}
	if p != nil && p.Tokens != nil {
		parts = append(parts, "bearer token")
	} else if !p.Authenticates() {
		parts = append(parts, "no authentication")
	}
	return strings.Join(parts, ", ")
}

// Reload reads the token file and the TLS files again (on SIGHUP, say).
// What fails to load leaves the old value in use.
func (p *Policy) Reload() error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.Tokens != nil {
		errs = append(errs, p.Tokens.Reload())
	}
	if p.TLS != nil {
		errs = append(errs, p.TLS.Reload())
	}
	return errors.Join(errs...)
}

// GRPCServerOptions are the options of a gRPC server that follows the
// policy: TLS credentials, and interceptors that answer a request without
// a valid token with codes.Unauthenticated before any handler runs.
// listener names the server in the log ("job service").
func (p *Policy) GRPCServerOptions(listener string) []grpc.ServerOption {
	if p == nil {
		return nil
	}
	var opts []grpc.ServerOption
	if p.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(p.TLS.Config())))
	}
	if p.Tokens != nil {
		opts = append(opts,
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if err := p.checkGRPC(ctx, listener, info.FullMethod); err != nil {
					return nil, err
				}
				return h(ctx, req)
			}),
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				if err := p.checkGRPC(ss.Context(), listener, info.FullMethod); err != nil {
					return err
				}
				return h(srv, ss)
			}))
	}
	return opts
}

// AuthorizationKey is the metadata key (gRPC) and header (HTTP) that
// carries the token, as "Bearer <token>".
const AuthorizationKey = "authorization"

func (p *Policy) checkGRPC(ctx context.Context, listener, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(AuthorizationKey)
	tok, ok := "", false
	if len(vals) == 1 {
		tok, ok = bearer(vals[0])
	}
	if ok && p.Tokens.Valid(tok) {
		return nil
	}
	reason := refusalReason(len(vals), ok)
	addr, subject := "", ""
	if pr, found := peer.FromContext(ctx); found {
		addr = pr.Addr.String()
		if ti, isTLS := pr.AuthInfo.(credentials.TLSInfo); isTLS {
			subject = clientSubject(ti.State)
		}
	}
	p.refused.note(listener, addr, subject, method, reason)
	return status.Errorf(codes.Unauthenticated, "weir: %s: %s; send %q metadata \"Bearer <token>\" (weir's CLI: --token-file or $%s)",
		listener, reason, AuthorizationKey, EnvToken)
}

// Handler wraps h so that a request without a valid token is answered 401
// with a Bearer challenge (RFC 6750) and a Basic one. Basic is for
// browsers, which cannot send a bearer token but prompt for Basic
// credentials: any user name, the token as the password, as GitHub and
// GitLab take tokens. Prometheus sends the token as a bearer token
// (authorization.credentials_file). listener names the server in the log.
func (p *Policy) Handler(listener string, h http.Handler) http.Handler {
	if p == nil || p.Tokens == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vals := r.Header.Values(AuthorizationKey)
		tok, ok := "", false
		if len(vals) == 1 {
			tok, ok = httpToken(vals[0])
		}
		if ok && p.Tokens.Valid(tok) {
			h.ServeHTTP(w, r)
			return
		}
		reason := refusalReason(len(vals), ok)
		subject := ""
		if r.TLS != nil {
			subject = clientSubject(*r.TLS)
		}
		p.refused.note(listener, r.RemoteAddr, subject, r.Method+" "+r.URL.Path, reason)
		challenge := `Bearer realm="weir"`
		if len(vals) > 0 {
			challenge += `, error="invalid_token"`
		}
		w.Header().Add("WWW-Authenticate", challenge)
		w.Header().Add("WWW-Authenticate", `Basic realm="weir", charset="UTF-8"`)
		http.Error(w, "weir: "+reason+`: send "Authorization: Bearer <token>"`, http.StatusUnauthorized)
	})
}

// WrapListener is l with the policy's TLS, for servers (net/http) that
// take a listener; gRPC servers take GRPCServerOptions instead.
func (p *Policy) WrapListener(l net.Listener) net.Listener {
	if !p.Encrypts() {
		return l
	}
	return tls.NewListener(l, p.TLS.Config())
}

// refusalReason says why a request with n authorization values, the
// only one parsed or not, was refused. More than one is refused whatever
// they hold: which of them a check reads must never be a question.
func refusalReason(n int, parsed bool) string {
	switch {
	case n == 0:
		return "no bearer token"
	case n > 1:
		return "more than one authorization"
	case !parsed:
		return "the authorization is not a bearer token"
	default:
		return "the token is not accepted"
	}
}

// bearer reads "Bearer <token>"; the scheme is case-insensitive (RFC 9110).
func bearer(v string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// httpToken reads a bearer token, or the password of Basic credentials.
func httpToken(v string) (string, bool) {
	if tok, ok := bearer(v); ok {
		return tok, true
	}
	scheme, enc, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", false
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", false
	}
	_, pw, ok := strings.Cut(string(dec), ":")
	return pw, ok
}

// clientSubject names the verified client certificate of a connection,
// if any.
func clientSubject(st tls.ConnectionState) string {
	if len(st.PeerCertificates) == 0 {
		return ""
	}
	return st.PeerCertificates[0].Subject.String()
}
