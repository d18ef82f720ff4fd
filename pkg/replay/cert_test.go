package replay

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// testChain is a CA and a leaf it signed for names, valid from a day ago for days.
func testChain(t *testing.T, days int, names ...string) (leaf, ca *x509.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Corp-Secret Issuing CA", Organization: []string{"corp-secret"}},
		NotBefore: now.Add(-24 * time.Hour), NotAfter: now.AddDate(1, 0, 0), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err = x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0], Locality: []string{"Amsterdam"}},
		NotBefore: now.Add(-24 * time.Hour), NotAfter: now.Add(time.Duration(days) * 24 * time.Hour), DNSNames: names,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	leaf, err = x509.ParseCertificate(der)
	require.NoError(t, err)
	return leaf, ca
}

// fixedHTTPS answers every probe with a reply judged from chain.
type fixedHTTPS struct{ chain []*x509.Certificate }

func (f fixedHTTPS) Get(_ context.Context, req probe.HTTPSRequest) (*probe.HTTPSReply, error) {
	return &probe.HTTPSReply{Addr: req.Addr, Host: req.Host, Status: 200,
		TLS: probe.DescribeCertificates(f.chain, "TLS 1.3", req.Host, nil, time.Now())}, nil
}

// recordChain records two probes served the same chain and returns the bundle (read back).
func recordChain(t *testing.T, chain ...*x509.Certificate) *Bundle {
	t.Helper()
	rec := NewRecorder("doctor", "test")
	h := rec.HTTPS(fixedHTTPS{chain: chain})
	for _, addr := range []string{"192.168.7.21:443", "192.168.7.22:443"} {
		_, err := h.Get(context.Background(), probe.HTTPSRequest{Addr: netip.MustParseAddrPort(addr), Host: "grafana.apps.corp-secret.net"})
		require.NoError(t, err)
	}
	var buf bytes.Buffer
	require.NoError(t, rec.Bundle().Write(&buf))
	b, err := Read(&buf, "bundle")
	require.NoError(t, err)
	return b
}

func replayTLS(t *testing.T, p *Player, addr, host string) probe.TLSInfo {
	t.Helper()
	r, err := p.HTTPS().Get(context.Background(), probe.HTTPSRequest{Addr: netip.MustParseAddrPort(addr), Host: host})
	require.NoError(t, err)
	return r.TLS
}

// The served chain is kept as DER, each certificate once, and the replay judges it again: the
// same names, dates, fingerprint, host match and (without roots of its own) verification.
func TestTheChainIsKeptAsDERAndJudgedAgainOnReplay(t *testing.T) {
	leaf, ca := testChain(t, 10, "grafana.apps.corp-secret.net")
	b := recordChain(t, leaf, ca)
	require.Len(t, b.Certificates, 2, "two probes, one chain: each certificate once")
	assert.Equal(t, []int{0, 1}, b.HTTPS[0].Chain)
	assert.Equal(t, []int{0, 1}, b.HTTPS[1].Chain)
	assert.Equal(t, leaf.Raw, b.Certificates[0])

	live := probe.DescribeCertificates([]*x509.Certificate{leaf, ca}, "TLS 1.3", "grafana.apps.corp-secret.net", nil, time.Now())
	got := replayTLS(t, NewPlayer(b), "192.168.7.21:443", "grafana.apps.corp-secret.net")
	assert.Equal(t, live.SHA256, got.SHA256)
	assert.Equal(t, live.Subject, got.Subject)
	assert.Equal(t, live.DNSNames, got.DNSNames)
	assert.Equal(t, 9, got.DaysLeft, "judged at the instant the probe judged it, not now")
	assert.True(t, got.HostMatches)
	assert.False(t, got.Verified, "the recorded verification: the system roots do not know this CA")
	assert.Equal(t, live.VerifyError, got.VerifyError)
	assert.Len(t, got.Chain, 2)

	// Given the CA (the replay's --ca-file), the replay verifies the chain itself.
	p := NewPlayer(b)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	p.SetRoots(roots)
	got = replayTLS(t, p, "192.168.7.21:443", "grafana.apps.corp-secret.net")
	assert.True(t, got.Verified, got.VerifyError)
	other, _ := testChain(t, 10, "x.example.org")
	p = NewPlayer(b)
	roots = x509.NewCertPool()
	roots.AddCert(other)
	p.SetRoots(roots)
	assert.False(t, replayTLS(t, p, "192.168.7.21:443", "grafana.apps.corp-secret.net").Verified)
}

// An older bundle (no certificates) replays the recorded judgement.
func TestABundleWithoutCertificatesReplaysTheRecordedJudgement(t *testing.T) {
	leaf, ca := testChain(t, 10, "grafana.apps.corp-secret.net")
	b := recordChain(t, leaf, ca)
	b.Certificates = nil
	for i := range b.HTTPS {
		b.HTTPS[i].Chain = nil
	}
	got := replayTLS(t, NewPlayer(b), "192.168.7.21:443", "grafana.apps.corp-secret.net")
	assert.Equal(t, probe.Fingerprint(leaf), got.SHA256)
	assert.Empty(t, got.Chain)
}

func TestAnonymizeReissuesTheCertificatesWithoutTheirNames(t *testing.T) {
	// The wrong certificate: its name is not the probe host's, nor under its domain.
	wrong, ca := testChain(t, 10, "wrong.other-secret.org", "203.0.113.9.nip.io")
	b := recordChain(t, wrong, ca)
	anon := Anonymize(b)
	raw, err := json.Marshal(anon)
	require.NoError(t, err)
	text := string(raw)
	for _, original := range []string{"corp-secret", "other-secret", "grafana", "Amsterdam", probe.Fingerprint(wrong), probe.Fingerprint(ca), "192.168.7.21"} {
		assert.NotContains(t, text, original)
	}
	require.Len(t, anon.Certificates, 2)
	for _, der := range anon.Certificates {
		for _, original := range []string{"corp-secret", "Corp-Secret", "other-secret", "Amsterdam"} {
			assert.False(t, bytes.Contains(der, []byte(original)), "the stand-in's DER holds %q", original)
		}
	}
	leaf, err := x509.ParseCertificate(anon.Certificates[0])
	require.NoError(t, err)
	standCA, err := x509.ParseCertificate(anon.Certificates[1])
	require.NoError(t, err)
	require.NoError(t, leaf.CheckSignatureFrom(standCA), "a stand-in chain still chains")
	assert.Equal(t, wrong.NotAfter, leaf.NotAfter)
	assert.Equal(t, wrong.NotBefore, leaf.NotBefore)
	assert.Equal(t, wrong.KeyUsage, leaf.KeyUsage)
	assert.Equal(t, wrong.ExtKeyUsage, leaf.ExtKeyUsage)
	assert.True(t, standCA.IsCA)
	assert.True(t, strings.HasSuffix(leaf.DNSNames[0], ".org"), "a name keeps its top-level label: %s", leaf.DNSNames[0])

	// The replay of the anonymized bundle judges the stand-in as the original was judged.
	host := anon.HTTPS[0].Host
	got := replayTLS(t, NewPlayer(anon), anon.HTTPS[0].Addr, host)
	want := replayTLS(t, NewPlayer(b), "192.168.7.21:443", "grafana.apps.corp-secret.net")
	assert.Equal(t, want.HostMatches, got.HostMatches)
	assert.False(t, got.HostMatches)
	assert.Equal(t, want.DaysLeft, got.DaysLeft)
	assert.Equal(t, want.Expired, got.Expired)
	assert.Equal(t, want.Verified, got.Verified)
	assert.Equal(t, probe.Fingerprint(leaf), got.SHA256)
	var reply probe.HTTPSReply
	require.NoError(t, json.Unmarshal(anon.HTTPS[0].Reply, &reply))
	assert.Equal(t, probe.Fingerprint(leaf), reply.TLS.SHA256, "the recorded judgement names the stand-in")
}

func TestACertificateTheBundleCannotHoldIsRefused(t *testing.T) {
	leaf, ca := testChain(t, 10, "grafana.apps.corp-secret.net")
	for name, mutate := range map[string]func(b *Bundle){
		"an index out of range": func(b *Bundle) { b.HTTPS[0].Chain = []int{0, 7} },
		"not a certificate":     func(b *Bundle) { b.Certificates[1] = []byte("not DER") },
		"too long a chain":      func(b *Bundle) { b.HTTPS[0].Chain = make([]int, MaxChain+1) },
	} {
		t.Run(name, func(t *testing.T) {
			b := recordChain(t, leaf, ca)
			mutate(b)
			raw, err := json.Marshal(b)
			require.NoError(t, err)
			_, err = Read(bytes.NewReader(raw), "bundle")
			var fe *FormatError
			require.ErrorAs(t, err, &fe)
		})
	}
}
