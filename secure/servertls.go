package secure

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// ServerTLSFiles names the PEM files of a listener's TLS.
type ServerTLSFiles struct {
	// Cert and Key are the server's certificate (chain) and private key.
	Cert, Key string
	// ClientCA, if set, holds the certificates of the authorities whose
	// client certificates the server accepts; a client without one is
	// refused during the handshake.
	ClientCA string
}

// ServerTLS is a listener's TLS configuration, read from files, and read
// again by Reload, so a renewed certificate is taken without a restart.
// Connections made before a Reload keep what they negotiated.
type ServerTLS struct {
	files ServerTLSFiles
	cur   atomic.Pointer[tls.Config]
}

// LoadServerTLS reads the files.
func LoadServerTLS(f ServerTLSFiles) (*ServerTLS, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("secure: TLS needs both a certificate and its key")
	}
	s := &ServerTLS{files: f}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the files again. On error the configuration in use stays.
func (s *ServerTLS) Reload() error {
	pair, err := tls.LoadX509KeyPair(s.files.Cert, s.files.Key)
	if err != nil {
		return fmt.Errorf("secure: TLS certificate %s, key %s: %w", s.files.Cert, s.files.Key, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if s.files.ClientCA != "" {
		pool, err := loadPool(s.files.ClientCA)
		if err != nil {
			return err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	s.cur.Store(cfg)
	return nil
}

// RequiresClientCert reports whether clients must present a certificate
// one of the client authorities signed.
func (s *ServerTLS) RequiresClientCert() bool { return s.files.ClientCA != "" }

// Config is the configuration a listener serves with. Each handshake takes
// the newest configuration Reload read.
func (s *ServerTLS) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.cur.Load(), nil
		},
	}
}

// loadPool reads a PEM file of CA certificates; a file with none is an
// error, not an empty pool that would refuse every peer in silence.
func loadPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secure: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("secure: CA file %s: no PEM certificate in it", path)
	}
	return pool, nil
}
