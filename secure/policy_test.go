package secure

import (
	"crypto/tls"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/weir-runner/weir/secure/securetest"
)

func testFiles(t *testing.T) securetest.Files { return securetest.New(t) }

func mustTLS(t *testing.T, f ServerTLSFiles) *ServerTLS {
	t.Helper()
	s, err := LoadServerTLS(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustTokens(t *testing.T, toks ...string) *Tokens {
	t.Helper()
	ts, err := TokensOf(toks...)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// serveHealth serves gRPC's health service under p on a loopback port: a
// unary RPC (Check) and a server stream (Watch) to call.
func serveHealth(t *testing.T, p *Policy) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(p.GRPCServerOptions("test service")...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// callHealth makes one unary and one streaming call with the dial options
// and the extra metadata; it returns the codes of both.
func callHealth(t *testing.T, addr string, md metadata.MD, opts ...grpc.DialOption) (unary, stream codes.Code) {
	t.Helper()
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := metadata.NewOutgoingContext(t.Context(), md)
	c := healthpb.NewHealthClient(conn)
	_, err = c.Check(ctx, &healthpb.HealthCheckRequest{})
	unary = status.Code(err)
	w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = w.Recv()
	}
	return unary, status.Code(err)
}

func TestGRPCTokens(t *testing.T) {
	p := NewPolicy(nil, mustTokens(t, tokA, tokB), slog.New(slog.DiscardHandler))
	addr := serveHealth(t, p)
	plain := grpc.WithTransportCredentials(insecure.NewCredentials())
	for _, c := range []struct {
		name string
		auth []string
		want codes.Code
	}{
		{"no token", nil, codes.Unauthenticated},
		{"wrong token", []string{"Bearer " + strings.Repeat("c", 32)}, codes.Unauthenticated},
		{"not bearer", []string{"Basic " + tokA}, codes.Unauthenticated},
		{"right token", []string{"Bearer " + tokA}, codes.OK},
		{"second token, scheme in lower case", []string{"bearer " + tokB}, codes.OK},
		{"a right token and a wrong one", []string{"Bearer " + tokA, "Bearer " + strings.Repeat("c", 32)}, codes.Unauthenticated},
	} {
		t.Run(c.name, func(t *testing.T) {
			md := metadata.MD{}
			if c.auth != nil {
				md.Set(AuthorizationKey, c.auth...)
			}
			if u, s := callHealth(t, addr, md, plain); u != c.want || s != c.want {
				t.Errorf("unary %v, stream %v; want %v", u, s, c.want)
			}
		})
	}
}

// The error a client sees says what is missing.
func TestGRPCRefusalSaysWhy(t *testing.T) {
	addr := serveHealth(t, NewPolicy(nil, mustTokens(t, tokA), slog.New(slog.DiscardHandler)))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "test service: no bearer token") {
		t.Errorf("message %q", msg)
	}
}

// With a client CA, the handshake refuses a client without a certificate,
// or with one another CA signed; the token is still required on top.
func TestGRPCClientCertificates(t *testing.T) {
	f := testFiles(t)
	p := NewPolicy(mustTLS(t, ServerTLSFiles{Cert: f.ServerCert, Key: f.ServerKey, ClientCA: f.CA}), mustTokens(t, tokA),
		slog.New(slog.DiscardHandler))
	addr := serveHealth(t, p)
	tok := metadata.Pairs(AuthorizationKey, "Bearer "+tokA)

	with := func(cfg *tls.Config) grpc.DialOption { return grpc.WithTransportCredentials(credentials.NewTLS(cfg)) }
	noCert := f.ClientTLS(t, false)
	otherCert := f.ClientTLS(t, false)
	pair, err := tls.LoadX509KeyPair(f.OtherCert, f.OtherKey)
	if err != nil {
		t.Fatal(err)
	}
	otherCert.Certificates = []tls.Certificate{pair}
	for _, c := range []struct {
		name string
		opt  grpc.DialOption
		md   metadata.MD
		want codes.Code
	}{
		{"plaintext", grpc.WithTransportCredentials(insecure.NewCredentials()), tok, codes.Unavailable},
		{"TLS without a client certificate", with(noCert), tok, codes.Unavailable},
		{"a certificate of another CA", with(otherCert), tok, codes.Unavailable},
		{"certificate, no token", with(f.ClientTLS(t, true)), nil, codes.Unauthenticated},
		{"certificate and token", with(f.ClientTLS(t, true)), tok, codes.OK},
	} {
		t.Run(c.name, func(t *testing.T) {
			if u, _ := callHealth(t, addr, c.md, c.opt); u != c.want {
				t.Errorf("got %v, want %v", u, c.want)
			}
		})
	}
}

// Client dials a secured server with what its fields say, as the CLI does.
func TestClientReachesSecuredServer(t *testing.T) {
	f := testFiles(t)
	p := NewPolicy(mustTLS(t, ServerTLSFiles{Cert: f.ServerCert, Key: f.ServerKey, ClientCA: f.CA}), mustTokens(t, tokA),
		slog.New(slog.DiscardHandler))
	addr := serveHealth(t, p)
	for _, c := range []struct {
		name string
		c    Client
		want codes.Code
	}{
		{"everything", Client{CAFile: f.CA, CertFile: f.ClientCert, KeyFile: f.ClientKey, Token: tokA}, codes.OK},
		{"no token", Client{CAFile: f.CA, CertFile: f.ClientCert, KeyFile: f.ClientKey}, codes.Unauthenticated},
		{"no certificate", Client{CAFile: f.CA, Token: tokA}, codes.Unavailable},
		{"system roots do not know the test CA", Client{TLS: true, CertFile: f.ClientCert, KeyFile: f.ClientKey, Token: tokA}, codes.Unavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts, err := c.c.DialOptions(addr)
			if err != nil {
				t.Fatal(err)
			}
			if u, s := callHealth(t, addr, nil, opts...); u != c.want || s != c.want {
				t.Errorf("unary %v, stream %v; want %v", u, s, c.want)
			}
		})
	}
}

// serveHTTP serves a handler that answers "ok" under p.
func serveHTTP(t *testing.T, p *Policy) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.Handler("http", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})), ErrorLog: log.New(io.Discard, "", 0)} // refused handshakes are the point
	go srv.Serve(p.WrapListener(lis))
	t.Cleanup(func() { srv.Close() })
	return lis.Addr().String()
}

func TestHTTPTokens(t *testing.T) {
	addr := serveHTTP(t, NewPolicy(nil, mustTokens(t, tokA), slog.New(slog.DiscardHandler)))
	for _, c := range []struct {
		name, auth string
		user, pw   string // Basic, when set
		want       int
		challenge  string
	}{
		{name: "no token", want: 401, challenge: `Bearer realm="weir"`},
		{name: "wrong token", auth: "Bearer " + tokB, want: 401, challenge: `error="invalid_token"`},
		{name: "right token", auth: "Bearer " + tokA, want: 200},
		{name: "Basic, token as password", user: "anyone", pw: tokA, want: 200},
		{name: "Basic, wrong password", user: "anyone", pw: tokB, want: 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+"/metrics", nil)
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			if c.user != "" {
				req.SetBasicAuth(c.user, c.pw)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.want)
			}
			if c.want == 401 {
				ch := resp.Header.Values("WWW-Authenticate")
				if len(ch) != 2 || !strings.Contains(ch[0], c.challenge) || !strings.HasPrefix(ch[1], "Basic ") {
					t.Errorf("WWW-Authenticate %q, want a Bearer challenge with %q, then Basic", ch, c.challenge)
				}
			}
		})
	}
}

func TestHTTPClientCertificates(t *testing.T) {
	f := testFiles(t)
	addr := serveHTTP(t, NewPolicy(mustTLS(t, ServerTLSFiles{Cert: f.ServerCert, Key: f.ServerKey, ClientCA: f.CA}), nil,
		slog.New(slog.DiscardHandler)))
	get := func(cfg *tls.Config) error {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Get("https://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(f.ClientTLS(t, false)); err == nil {
		t.Error("no client certificate: the request went through")
	}
	if err := get(f.ClientTLS(t, true)); err != nil {
		t.Errorf("with the client certificate: %v", err)
	}
}

// A renewed certificate is served after Reload, without a restart.
func TestServerTLSReload(t *testing.T) {
	f := testFiles(t)
	s := mustTLS(t, ServerTLSFiles{Cert: f.ServerCert, Key: f.ServerKey})
	addr := serveHTTP(t, NewPolicy(s, nil, slog.New(slog.DiscardHandler)))
	g := testFiles(t) // a new CA and server certificate
	if err := copyFile(g.ServerCert, f.ServerCert); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(g.ServerKey, f.ServerKey); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: g.ClientTLS(t, false)}}
	resp, err := c.Get("https://" + addr + "/")
	if err != nil {
		t.Fatalf("after Reload, a client trusting the new CA: %v", err)
	}
	resp.Body.Close()
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}

func TestPolicyString(t *testing.T) {
	f := testFiles(t)
	for _, c := range []struct {
		p    *Policy
		want string
	}{
		{nil, "plaintext, no authentication"},
		{&Policy{Tokens: mustTokens(t, tokA)}, "plaintext, bearer token"},
		{&Policy{TLS: mustTLS(t, ServerTLSFiles{Cert: f.ServerCert, Key: f.ServerKey})}, "TLS, no authentication"},
		{&Policy{TLS: mustTLS(t, ServerTLSFiles{Cert: f.ServerCert, Key: f.ServerKey, ClientCA: f.CA}), Tokens: mustTokens(t, tokA)},
			"TLS with client certificates, bearer token"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

// Two Authorization headers are refused even when one is right.
func TestHTTPTwoAuthorizations(t *testing.T) {
	addr := serveHTTP(t, NewPolicy(nil, mustTokens(t, tokA), slog.New(slog.DiscardHandler)))
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+"/", nil)
	req.Header.Add("Authorization", "Bearer "+tokA)
	req.Header.Add("Authorization", "Bearer "+tokB)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status %d, want 401", resp.StatusCode)
	}
}
