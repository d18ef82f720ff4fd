package probe

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testCA is a root and a leaf maker (probetest imports this package, so it is not used here).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return testCA{cert: cert, key: key}
}

func (ca testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func (ca testCA) leaf(t *testing.T, serial int64, notAfter time.Time, host string) []*x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return []*x509.Certificate{cert}
}

func TestVerifyCacheAnswersTheSameChainOnlyWhileItIsValid(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	chain := ca.leaf(t, 2, now.Add(time.Hour), "app.example.com")
	roots := ca.pool()
	var c verifyCache

	require.NoError(t, c.verify(chain, "app.example.com", roots, now))
	require.Len(t, c.good, 1, "a verified chain is kept")
	require.NoError(t, c.verify(chain, "app.example.com", roots, now.Add(time.Minute)))

	// Another host, other roots, or an instant outside the chain's validity: verified again.
	require.Error(t, c.verify(chain, "other.example.com", ca.pool(), now))
	require.Error(t, c.verify(chain, "app.example.com", newTestCA(t).pool(), now))
	err := c.verify(chain, "app.example.com", roots, now.Add(2*time.Hour))
	var invalid x509.CertificateInvalidError
	require.ErrorAs(t, err, &invalid)
	assert.Equal(t, x509.Expired, invalid.Reason)
	assert.Len(t, c.good, 1, "failures are not kept")

	// A nil cache (a replay's DescribeCertificates) verifies every time.
	var none *verifyCache
	require.NoError(t, none.verify(chain, "app.example.com", roots, now))
}

func TestVerifyCacheIsBounded(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	roots := ca.pool()
	var c verifyCache
	for i := range maxVerifiedChains + 3 {
		chain := ca.leaf(t, int64(i+2), now.Add(time.Hour), "app.example.com")
		require.NoError(t, c.verify(chain, "app.example.com", roots, now))
	}
	assert.Len(t, c.good, maxVerifiedChains)
}
