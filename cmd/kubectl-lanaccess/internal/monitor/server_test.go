package monitor

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
)

// webConfig writes an exporter web configuration: TLS with a certificate of ca for
// 127.0.0.1, and one basic-auth user.
func webConfig(t *testing.T, ca *probetest.CA, user, password string) string {
	t.Helper()
	dir := t.TempDir()
	cert := ca.Issue(t, time.Now().Add(time.Hour), "localhost")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	require.NoError(t, err)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600))
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	require.NoError(t, err)
	cfg := "tls_server_config:\n  cert_file: " + filepath.Join(dir, "tls.crt") + "\n  key_file: " + filepath.Join(dir, "tls.key") +
		"\nbasic_auth_users:\n  " + user + ": " + string(hash) + "\n"
	path := filepath.Join(dir, "web.yml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

// The monitor's server takes TLS and basic auth from the exporters' web configuration, as every
// Prometheus exporter does (issue 23: it had neither).
func TestServeTakesTLSAndBasicAuthFromTheWebConfig(t *testing.T) {
	lan := probetest.NewLAN(t)
	ca := probetest.NewCA(t)
	path := webConfig(t, ca, "prometheus", "s3cret")
	m, _ := newTestMonitor(t, lan, lanSource(t, lan), func(c *Config) { c.Interval = time.Hour; c.WebConfigFile = path })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}}}
	url := "https://" + ln.Addr().String() + "/healthz"
	get := func(user, password string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		require.NoError(t, err)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, get("", ""), "no credentials")
	assert.Equal(t, http.StatusUnauthorized, get("prometheus", "wrong"), "a wrong password")
	assert.Equal(t, http.StatusOK, get("prometheus", "s3cret"))

	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + ln.Addr().String() + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP to the TLS port is refused")
}

// /healthz says healthy or not and nothing of the last run's error: that text holds the
// cluster's URL and the API server's words, for whoever reaches the port (issue 23).
func TestHealthzDoesNotTellTheLastRunsError(t *testing.T) {
	lan := probetest.NewLAN(t)
	m, _ := newTestMonitor(t, lan, failingSource{})
	require.Error(t, m.RunOnce(t.Context()))
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	assert.NotContains(t, rec.Body.String(), "10.0.10.10")
	assert.NotContains(t, rec.Body.String(), "connection refused")
	assert.Contains(t, rec.Body.String(), `"status"`)
}
