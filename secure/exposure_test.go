package secure

import (
	"strings"
	"testing"
)

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"localhost:8099": true, "LOCALHOST": true, "127.0.0.1:1": true, "127.8.9.10:1": true, "[::1]:8099": true, "::1": true,
		"localhost.:1": true,
		":8099":        false, "0.0.0.0:8099": false, "[::]:8099": false, "10.1.2.3:8099": false, "weir.example.com:8099": false,
		"localhost.example.com:1": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestCheckExposure(t *testing.T) {
	toks, err := TokensOf(tokA)
	if err != nil {
		t.Fatal(err)
	}
	files := testFiles(t)
	plainTLS := mustTLS(t, ServerTLSFiles{Cert: files.ServerCert, Key: files.ServerKey})
	mutual := mustTLS(t, ServerTLSFiles{Cert: files.ServerCert, Key: files.ServerKey, ClientCA: files.CA})
	for _, c := range []struct {
		name     string
		addr     string
		p        *Policy
		insecure bool
		refuse   string
		warn     string
	}{
		{"loopback, open", "localhost:8099", nil, false, "", ""},
		{"loopback IP, open", "127.0.0.1:0", nil, false, "", ""},
		{"all interfaces, open", "0.0.0.0:8099", nil, false, "reachable from the network, and let anyone in", ""},
		{"empty host, open", ":8099", nil, false, "let anyone in", ""},
		{"named host, open", "weir.internal:8099", nil, false, "let anyone in", ""},
		{"TLS alone authenticates no one", "0.0.0.0:8099", &Policy{TLS: plainTLS}, false, "let anyone in", ""},
		{"open, --insecure", "0.0.0.0:8099", nil, true, "", "lets anyone in (--insecure)"},
		{"token without TLS", "0.0.0.0:8099", &Policy{Tokens: toks}, false, "", "token travels in clear"},
		{"token and TLS", "0.0.0.0:8099", &Policy{Tokens: toks, TLS: plainTLS}, false, "", ""},
		{"client certificates", "0.0.0.0:8099", &Policy{TLS: mutual}, false, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := CheckExposure("job service", c.addr, c.p, c.insecure)
			if (e.Refuse != nil) != (c.refuse != "") || (e.Refuse != nil && !strings.Contains(e.Refuse.Error(), c.refuse)) {
				t.Errorf("Refuse = %v, want %q", e.Refuse, c.refuse)
			}
			if (e.Warning != "") != (c.warn != "") || !strings.Contains(e.Warning, c.warn) {
				t.Errorf("Warning = %q, want %q", e.Warning, c.warn)
			}
		})
	}
}
