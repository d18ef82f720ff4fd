package pki

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGenerateLabIssuesCertificatesThatVerifyForTheirNames(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, GenerateLab(dir, Addresses{APIServerIP: "10.0.10.10", KubernetesVIP: "10.96.0.1",
		Nodes: []NodeIP{{Name: "node-1", IP: "10.0.10.11"}}, AppsZone: "apps.example.com"}))
	ca, err := Load(dir, CA)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	verify := func(name, host string, usage x509.ExtKeyUsage) error {
		p, err := Load(dir, name)
		require.NoError(t, err)
		_, err = p.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
	assert.NoError(t, verify(AppsWildcard, "grafana.apps.example.com", x509.ExtKeyUsageServerAuth))
	assert.NoError(t, verify(APIServer, "10.0.10.10", x509.ExtKeyUsageServerAuth))
	assert.NoError(t, verify(APIServer, "kubernetes.default.svc", x509.ExtKeyUsageServerAuth))
	assert.NoError(t, verify(KwokServing("node-1"), "10.0.10.11", x509.ExtKeyUsageServerAuth))
	assert.NoError(t, verify(Admin, "", x509.ExtKeyUsageClientAuth))

	assert.ErrorContains(t, verify(WrongHost, "grafana.apps.example.com", x509.ExtKeyUsageServerAuth), "wrong.example.net")
	assert.ErrorContains(t, verify(Expired, "grafana.apps.example.com", x509.ExtKeyUsageServerAuth), "expired")
	assert.ErrorContains(t, verify(UnknownCA, "grafana.apps.example.com", x509.ExtKeyUsageServerAuth), "unknown authority")

	admin, err := Load(dir, Admin)
	require.NoError(t, err)
	assert.Equal(t, []string{"system:masters"}, admin.Cert.Subject.Organization)
	assert.WithinDuration(t, time.Now().Add(Validity), admin.Cert.NotAfter, time.Hour)
}
