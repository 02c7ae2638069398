// Package securetest makes the certificates weir's transport security
// tests need, at test time: a certificate authority, a server certificate
// for localhost, 127.0.0.1 and ::1, and a client certificate, each signed
// by the authority. No key is ever committed: every test makes its own.
//
// Go tests call New and read the files or the parsed forms; scripts
// (python/, java/) run internal/tools/testcerts, which writes the same
// files into a folder.
package securetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files names the PEM files Write makes in a folder.
type Files struct {
	CA         string // the authority's certificate: the clients' --tls-ca, the server's --tls-client-ca
	ServerCert string // the server's certificate, for localhost, 127.0.0.1 and ::1
	ServerKey  string
	ClientCert string // a client certificate the authority signed
	ClientKey  string
	// OtherCA and the client pair under it are signed by a second
	// authority the server does not trust.
	OtherCA   string
	OtherCert string
	OtherKey  string
}

// Write makes a fresh authority and its certificates in dir and returns
// their paths. Keys are written 0600.
func Write(dir string) (Files, error) {
	ca, err := newCA("weir test CA")
	if err != nil {
		return Files{}, err
	}
	other, err := newCA("weir test CA the server does not trust")
	if err != nil {
		return Files{}, err
	}
	f := Files{
		CA: filepath.Join(dir, "ca.pem"), ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
		OtherCA: filepath.Join(dir, "other-ca.pem"), OtherCert: filepath.Join(dir, "other-client.pem"), OtherKey: filepath.Join(dir, "other-client-key.pem"),
	}
	if err := writeCert(f.CA, ca.der); err != nil {
		return Files{}, err
	}
	if err := writeCert(f.OtherCA, other.der); err != nil {
		return Files{}, err
	}
	for _, l := range []struct {
		by         *authority
		server     bool
		cert, key  string
		commonName string
	}{
		{ca, true, f.ServerCert, f.ServerKey, "localhost"},
		{ca, false, f.ClientCert, f.ClientKey, "weir test client"},
		{other, false, f.OtherCert, f.OtherKey, "weir test client of the other CA"},
	} {
		if err := l.by.issue(l.commonName, l.server, l.cert, l.key); err != nil {
			return Files{}, err
		}
	}
	return f, nil
}

// authority is a self-signed CA in memory.
type authority struct {
	cert *x509.Certificate
	der  []byte
	key  *ecdsa.PrivateKey
}

func newCA(name string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := template(name)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("securetest: CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, der: der, key: key}, nil
}

// issue writes a certificate for a server (localhost and the loopback
// addresses) or a client, signed by a.
func (a *authority) issue(name string, server bool, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := template(name)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return fmt.Errorf("securetest: certificate %q: %w", name, err)
	}
	if err := writeCert(certPath, der); err != nil {
		return err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
}

func template(name string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"weir tests"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
	}
}

func writeCert(path string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// TB is the part of testing.TB New uses.
type TB interface {
	Helper()
	TempDir() string
	Fatal(args ...any)
}

// New writes a fresh set of certificates into a temporary folder of t.
func New(t TB) Files {
	t.Helper()
	f, err := Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// ClientTLS is a client configuration that trusts f's authority and, if
// withCert, presents f's client certificate.
func (f Files) ClientTLS(t TB, withCert bool) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if withCert {
		pair, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}
