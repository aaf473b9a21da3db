package serve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/calib-dev/calib/internal/pkgerr"
)

// ListenOptions says where and how a Server listens. The zero value but
// Addr is plain HTTP with the default timeouts.
type ListenOptions struct {
	// Addr is host:port; a host that is not a loopback address (or
	// empty: every interface) needs a token (Options.Token) or client
	// certificates (ClientCA).
	Addr string
	// TLSCert and TLSKey, both or neither, are PEM files: HTTPS.
	TLSCert, TLSKey string
	// ClientCA, a PEM file of CA certificates (with TLSCert and TLSKey),
	// makes the server require and verify a client certificate.
	ClientCA string
	// Timeouts of http.Server; 0 means DefaultReadTimeout,
	// DefaultWriteTimeout and DefaultIdleTimeout.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownTimeout bounds the drain of requests in flight once the
	// context ends; 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
}

// Default timeouts of ListenOptions.
const (
	DefaultReadTimeout     = 30 * time.Second
	DefaultWriteTimeout    = 60 * time.Second
	DefaultIdleTimeout     = 120 * time.Second
	DefaultShutdownTimeout = 10 * time.Second
)

// ErrExposed is wrapped by the error of an address that is not a
// loopback address, given without a token or client certificates.
var ErrExposed = errors.New("serve: the address is not a loopback address and nothing authenticates the clients")

// CheckExposure refuses addr (host:port) when its host is not a loopback
// address and neither a token nor client certificates authenticate the
// clients: an empty host, 0.0.0.0 and :: listen on every interface.
func CheckExposure(addr string, token, clientCerts bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return pkgerr.Errorf("serve", "address %q: want host:port (127.0.0.1:8080)", addr)
	}
	if Loopback(host) || token || clientCerts {
		return nil
	}
	return &pkgerr.Error{Pkg: "serve", Field: "addr", Err: exposure(addr)}
}

// exposure is the reason of an exposed address: it is ErrExposed.
type exposure string

func (e exposure) Error() string {
	return string(e) + " listens beyond this machine; give a token (--token-file) or client certificates (--tls-client-ca), or listen on 127.0.0.1"
}

// Is reports whether target is ErrExposed.
func (e exposure) Is(target error) bool { return target == ErrExposed }

// Loopback reports whether host (a name or an IP address) names only this
// machine: localhost or a loopback address.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve listens on lo.Addr and serves s until ctx ends, then stops taking
// connections and lets the requests in flight finish (at most
// lo.ShutdownTimeout). listening, if not nil, is called with the address
// bound (the port chosen for :0) once the server accepts connections.
func (s *Server) Serve(ctx context.Context, lo ListenOptions, listening func(net.Addr)) error {
	if err := CheckExposure(lo.Addr, len(s.o.Token) > 0, lo.ClientCA != ""); err != nil {
		return err
	}
	tlsConfig, err := lo.tlsConfig()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", lo.Addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	or := func(d, def time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return def
	}
	if wt := or(lo.WriteTimeout, DefaultWriteTimeout); time.Duration(s.reportTimeout.Load()) > wt*4/5 {
		s.reportTimeout.Store(int64(wt * 4 / 5))
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadTimeout:       or(lo.ReadTimeout, DefaultReadTimeout),
		ReadHeaderTimeout: or(lo.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      or(lo.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       or(lo.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if listening != nil {
		listening(ln.Addr())
	}
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), or(lo.ShutdownTimeout, DefaultShutdownTimeout))
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	return nil
}

// tlsConfig returns the TLS configuration of lo, or nil for plain HTTP.
func (lo ListenOptions) tlsConfig() (*tls.Config, error) {
	if (lo.TLSCert == "") != (lo.TLSKey == "") {
		return nil, errors.New("serve: give both a TLS certificate and its key, or neither")
	}
	if lo.TLSCert == "" {
		if lo.ClientCA != "" {
			return nil, errors.New("serve: client certificates need TLS: give a certificate and its key")
		}
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(lo.TLSCert, lo.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("serve: TLS certificate %s and key %s: %w", lo.TLSCert, lo.TLSKey, err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if lo.ClientCA != "" {
		pem, err := os.ReadFile(lo.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("serve: client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("serve: client CA %s: no PEM certificate in it", lo.ClientCA)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}
