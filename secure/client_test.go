package secure

import (
	"strings"
	"testing"
)

// A token is sent in plaintext only to loopback.
func TestClientTokenOnlyOverTLSUnlessLoopback(t *testing.T) {
	f := testFiles(t)
	for _, c := range []struct {
		endpoint string
		c        Client
		err      string
	}{
		{"localhost:8099", Client{Token: tokA}, ""},
		{"127.0.0.1:8099", Client{Token: tokA}, ""},
		{"10.0.0.5:8099", Client{Token: tokA}, "only over TLS"},
		{"weir.example.com:8099", Client{Token: tokA}, "only over TLS"},
		{"weir.example.com:8099", Client{Token: tokA, CAFile: f.CA}, ""},
		{"weir.example.com:8099", Client{}, ""},
		{"weir.example.com:8099", Client{CertFile: f.ClientCert}, "both its certificate and its key"},
		{"weir.example.com:8099", Client{CAFile: f.ClientKey}, "no PEM certificate"},
	} {
		_, err := c.c.DialOptions(c.endpoint)
		if (err != nil) != (c.err != "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s %+v: err %v, want %q", c.endpoint, c.c, err, c.err)
		}
	}
}

func TestClientWithEnv(t *testing.T) {
	env := map[string]string{EnvTLSCA: "/env/ca.pem", EnvToken: "from-env", EnvTLS: "true", EnvTLSCert: "/env/c.pem"}
	got, err := Client{CAFile: "/flag/ca.pem"}.WithEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := Client{TLS: true, CAFile: "/flag/ca.pem", CertFile: "/env/c.pem", Token: "from-env"}
	if got != want {
		t.Errorf("got %+v, want %+v (a flag wins over the environment)", got, want)
	}
	if _, err := (Client{}).WithEnv(func(k string) string { return map[string]string{EnvTLS: "yes please"}[k] }); err == nil {
		t.Error("WEIR_TLS=yes please: no error")
	}
	if (Client{}).Configured() || !(Client{Token: "x"}).Configured() || !(Client{TLS: true}).Configured() {
		t.Error("Configured")
	}
}
