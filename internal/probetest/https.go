package probetest

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

// HTTPSServer describes one stand-in for the proxy on one address.
type HTTPSServer struct {
	Cert    tls.Certificate
	Handler http.Handler
	// HandshakeDelay holds the TLS handshake back (a slow link or an overloaded node).
	HandshakeDelay time.Duration
}

// StartHTTPS serves s on a free port of ip (a loopback address) until the test ends.
func StartHTTPS(t testing.TB, ip string, s HTTPSServer) netip.AddrPort {
	t.Helper()
	requireLoopback(t, ip)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen tcp on %s: %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(s.Handler)
	srv.Listener = ln
	cert := s.Cert
	delay := s.HandshakeDelay
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{cert},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			if delay > 0 {
				time.Sleep(delay)
			}
			return nil, nil // the server's own config
		},
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// RedirectTo answers every request with status and a Location header, as a forward-auth
// middleware sends a visitor to the identity provider.
func RedirectTo(status int, location string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Location", location)
		w.WriteHeader(status)
	})
}

// Slow delays h's response head (first byte) by d.
func Slow(d time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(d)
		h.ServeHTTP(w, r)
	})
}

// EchoHost answers 200 with the Host header it received in the X-Seen-Host header, so a test
// can check the probe sent the probe host, not the address.
func EchoHost() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Seen-Host", r.Host)
		w.Header().Set("X-Seen-Sni", r.TLS.ServerName)
		w.Header().Set("X-Seen-User-Agent", r.UserAgent())
		w.WriteHeader(http.StatusOK)
	})
}

// EndlessHead answers with a status line and then header lines without end, as fast as the
// connection takes them: a hostile server trying to grow the prober's memory.
func EndlessHead() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		line := []byte("X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n")
		if _, err := buf.WriteString("HTTP/1.1 302 Found\r\n"); err != nil {
			return
		}
		for {
			if _, err := buf.Write(line); err != nil {
				return
			}
			if err := buf.Flush(); err != nil {
				return
			}
		}
	})
}
