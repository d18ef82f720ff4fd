package probe_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

const probeHost = "grafana.apps.example.com"

func counting(n *atomic.Int32, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	})
}

func TestHTTPSClient(t *testing.T) {
	ca := probetest.NewCA(t)
	inMonth := time.Now().Add(30 * 24 * time.Hour)
	good := ca.Issue(t, inMonth, "*.apps.example.com")
	idp := probetest.RedirectTo(http.StatusFound, "https://idp.example.com/auth?rd=x")

	tests := []struct {
		name    string
		cert    tls.Certificate
		handler http.Handler
		check   func(t *testing.T, r *probe.HTTPSReply, requests int32)
	}{
		{
			name: "the request carries the probe host as SNI and Host although it dials an address",
			cert: good, handler: probetest.EchoHost(),
			check: func(t *testing.T, r *probe.HTTPSReply, _ int32) {
				t.Helper()
				assert.Equal(t, http.StatusOK, r.Status)
				assert.Equal(t, probeHost, r.Header.Get("X-Seen-Sni"))
				assert.Contains(t, r.Header.Get("X-Seen-Host"), probeHost)
				assert.Equal(t, version.UserAgent(), r.Header.Get("X-Seen-User-Agent"), "the proxy's access log names the plugin and its version")
			},
		},
		{
			name: "a 302 is reported with its Location and not followed",
			cert: good, handler: idp,
			check: func(t *testing.T, r *probe.HTTPSReply, requests int32) {
				t.Helper()
				assert.Equal(t, http.StatusFound, r.Status)
				assert.Equal(t, "https://idp.example.com/auth?rd=x", r.Location)
				require.NotNil(t, r.LocationURL)
				assert.Equal(t, "idp.example.com", r.LocationURL.Host)
				assert.Equal(t, int32(1), requests)
			},
		},
		{
			name: "a redirect back to the same URL is reported, not followed into a loop",
			cert: good, handler: probetest.RedirectTo(http.StatusFound, "/"),
			check: func(t *testing.T, r *probe.HTTPSReply, requests int32) {
				t.Helper()
				require.NotNil(t, r.LocationURL)
				assert.Equal(t, probeHost, r.LocationURL.Hostname())
				assert.Equal(t, "/", r.LocationURL.Path)
				assert.Equal(t, int32(1), requests)
			},
		},
		{
			name: "a certificate from the trusted CA is verified for the host, with days left and fingerprint",
			cert: good, handler: idp,
			check: func(t *testing.T, r *probe.HTTPSReply, _ int32) {
				t.Helper()
				assert.True(t, r.TLS.Verified, r.TLS.VerifyError)
				assert.True(t, r.TLS.HostMatches)
				assert.False(t, r.TLS.TraefikDefault)
				assert.InDelta(t, 29, r.TLS.DaysLeft, 1)
				assert.Equal(t, probe.Fingerprint(good.Leaf), r.TLS.SHA256)
				assert.Equal(t, []string{"*.apps.example.com"}, r.TLS.DNSNames)
				assert.Equal(t, 1, r.TLS.ChainLength)
			},
		},
		{
			name: "a certificate for another host is described, not refused",
			cert: ca.Issue(t, inMonth, "other.example.net"), handler: idp,
			check: func(t *testing.T, r *probe.HTTPSReply, _ int32) {
				t.Helper()
				assert.Equal(t, http.StatusFound, r.Status, "the exchange went on")
				assert.False(t, r.TLS.HostMatches)
				assert.False(t, r.TLS.Verified)
				assert.False(t, r.TLS.Untrusted(), "a wrong host is not a trust problem")
				assert.Contains(t, r.TLS.VerifyError, "other.example.net")
			},
		},
		{
			name: "Traefik's default certificate is recognised",
			cert: probetest.TraefikDefault(t), handler: http.NotFoundHandler(),
			check: func(t *testing.T, r *probe.HTTPSReply, _ int32) {
				t.Helper()
				assert.True(t, r.TLS.TraefikDefault)
				assert.False(t, r.TLS.HostMatches)
				assert.Equal(t, http.StatusNotFound, r.Status)
			},
		},
		{
			name: "an expired certificate is reported with negative days",
			cert: ca.Issue(t, time.Now().Add(-time.Minute), probeHost), handler: idp,
			check: func(t *testing.T, r *probe.HTTPSReply, _ int32) {
				t.Helper()
				assert.True(t, r.TLS.Expired)
				assert.Equal(t, -1, r.TLS.DaysLeft)
				assert.False(t, r.TLS.Verified)
			},
		},
		{
			name: "the timings are measured: first byte includes the server's delay",
			cert: good, handler: probetest.Slow(100*time.Millisecond, idp),
			check: func(t *testing.T, r *probe.HTTPSReply, _ int32) {
				t.Helper()
				assert.GreaterOrEqual(t, r.Timings.FirstByte, 100*time.Millisecond)
				assert.Positive(t, r.Timings.Connect)
				assert.Positive(t, r.Timings.Handshake)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int32
			addr := probetest.StartHTTPS(t, "127.0.0.1", probetest.HTTPSServer{Cert: tc.cert, Handler: counting(&requests, tc.handler)})
			c := &probe.HTTPSClient{Timeout: 5 * time.Second, Roots: ca.Pool()}
			r, err := c.Get(context.Background(), probe.HTTPSRequest{Addr: addr, Host: probeHost})
			require.NoError(t, err)
			assert.Equal(t, addr, r.Addr)
			tc.check(t, r, requests.Load())
		})
	}
}

func TestHTTPSClientWithoutTheCAReportsAnUntrustedChain(t *testing.T) {
	ca := probetest.NewCA(t)
	addr := probetest.StartHTTPS(t, "127.0.0.1", probetest.HTTPSServer{
		Cert: ca.Issue(t, time.Now().Add(time.Hour), probeHost), Handler: probetest.EchoHost(),
	})
	r, err := (&probe.HTTPSClient{Timeout: 5 * time.Second}).Get(context.Background(), probe.HTTPSRequest{Addr: addr, Host: probeHost})
	require.NoError(t, err)
	assert.True(t, r.TLS.Untrusted())
	assert.Contains(t, r.TLS.VerifyError, "unknown authority")
}

func TestHTTPSClientSilentListenerIsNoAnswer(t *testing.T) {
	addr := probetest.Blackhole(t, "127.0.0.1")
	_, err := (&probe.HTTPSClient{Timeout: 300 * time.Millisecond}).Get(context.Background(), probe.HTTPSRequest{Addr: addr, Host: probeHost})
	var na *probe.NoAnswerError
	require.ErrorAs(t, err, &na)
	assert.Contains(t, err.Error(), "TLS handshake")
}

func TestHTTPSClientClosedPortIsRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().(*net.TCPAddr).AddrPort()
	require.NoError(t, ln.Close())
	_, err = (&probe.HTTPSClient{Timeout: 2 * time.Second}).Get(context.Background(), probe.HTTPSRequest{Addr: addr, Host: probeHost})
	require.Error(t, err)
	assert.True(t, probe.IsRefused(err), "got %v", err)
	assert.False(t, probe.IsNoAnswer(err))
}

func TestHTTPSRequestURL(t *testing.T) {
	r := probe.HTTPSRequest{Host: probeHost}
	r.Addr = netipAddrPort(t, "10.0.10.11:443")
	assert.Equal(t, "https://grafana.apps.example.com/", r.URL().String())
	r.Addr = netipAddrPort(t, "10.0.10.11:8443")
	r.Path = "/healthz"
	assert.Equal(t, "https://grafana.apps.example.com:8443/healthz", r.URL().String())
}

// Link sampling: several requests on one connection (one TCP and TLS handshake), each timed.
func TestHTTPSClientSendsSeveralRequestsOnOneConnection(t *testing.T) {
	ca := probetest.NewCA(t)
	var mu sync.Mutex
	conns := map[string]int{}
	addr := probetest.StartHTTPS(t, "127.0.0.1", probetest.HTTPSServer{
		Cert: ca.Issue(t, time.Now().Add(time.Hour), probeHost),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			conns[r.RemoteAddr]++
			mu.Unlock()
			http.Redirect(w, r, "https://auth.example.com/start", http.StatusFound)
		}),
	})
	c := &probe.HTTPSClient{Timeout: 5 * time.Second, Roots: ca.Pool()}
	r, err := c.Get(context.Background(), probe.HTTPSRequest{Addr: addr, Host: probeHost, Requests: 3})
	require.NoError(t, err)
	assert.Len(t, r.FirstBytes, 3)
	assert.Equal(t, r.FirstBytes[0], r.Timings.FirstByte)
	assert.Equal(t, http.StatusFound, r.Status)
	assert.NotEmpty(t, r.TLS.Subject)
	mu.Lock()
	assert.Len(t, conns, 1, "one connection")
	for _, n := range conns {
		assert.Equal(t, 3, n)
	}
	mu.Unlock()

	r, err = c.Get(context.Background(), probe.HTTPSRequest{Addr: addr, Host: probeHost})
	require.NoError(t, err)
	assert.Len(t, r.FirstBytes, 1)
}

func TestHTTPSClientStopsReadingAnEndlessResponseHead(t *testing.T) {
	ca := probetest.NewCA(t)
	addr := probetest.StartHTTPS(t, "127.0.0.1", probetest.HTTPSServer{
		Cert: ca.Issue(t, time.Now().Add(time.Hour), probeHost), Handler: probetest.EndlessHead(),
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := (&probe.HTTPSClient{Timeout: 5 * time.Second}).Get(context.Background(), probe.HTTPSRequest{Addr: addr, Host: probeHost})
	runtime.ReadMemStats(&after)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "64 KiB")
	assert.Less(t, time.Since(start), 4*time.Second, "stopped by the byte bound, not by the deadline")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "the head read allocates a bounded amount")
	t.Logf("endless head: stopped after %s, %d KiB allocated", time.Since(start).Round(time.Millisecond), (after.TotalAlloc-before.TotalAlloc)>>10)
}
