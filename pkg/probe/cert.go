package probe

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math"
	"strings"
	"time"
)

// TraefikDefaultCN is the subject of the self-signed certificate Traefik serves when no router's
// TLS configuration matches the SNI: seeing it means no route matched the host.
const TraefikDefaultCN = "TRAEFIK DEFAULT CERT"

// TLSInfo describes the served chain as a user would want it in a report.
type TLSInfo struct {
	Version  string
	Subject  string
	Issuer   string
	DNSNames []string
	NotAfter time.Time
	// DaysLeft is whole days until NotAfter (negative once expired).
	DaysLeft int
	// SHA256 is the leaf's fingerprint as `openssl x509 -fingerprint -sha256` prints it.
	SHA256 string
	// ChainLength counts the certificates served, leaf included.
	ChainLength int
	// HostMatches says the leaf covers the probe host (SAN, wildcard included).
	HostMatches bool
	Expired     bool
	// Verified is a full verification (roots, chain, host, dates); VerifyError says why not.
	Verified    bool
	VerifyError string
	// TraefikDefault is Traefik's fallback certificate.
	TraefikDefault bool
	// CheckedAt is the instant the dates were judged at (DaysLeft, Expired, Verified).
	CheckedAt time.Time `json:",omitzero"`
	// Chain is the served certificates as DER, leaf first: what the fields above were judged
	// from (a recording keeps it; a replay judges it again with DescribeCertificates).
	Chain [][]byte `json:"-"`
}

// Untrusted is a chain that fails for a reason other than the host or the dates: an unknown
// authority, a missing intermediate. --insecure or --ca-file are for this case only.
func (t TLSInfo) Untrusted() bool {
	return !t.Verified && t.HostMatches && !t.Expired
}

func describeChain(state tls.ConnectionState, host string, roots *x509.CertPool, now time.Time, cache *verifyCache) TLSInfo {
	return describeCertificates(state.PeerCertificates, tls.VersionName(state.Version), host, roots, now, cache)
}

// DescribeCertificates judges a served chain (leaf first) for host at now, verifying it
// against roots (nil: the system roots). version is the TLS version the handshake agreed.
func DescribeCertificates(certs []*x509.Certificate, version, host string, roots *x509.CertPool, now time.Time) TLSInfo {
	return describeCertificates(certs, version, host, roots, now, nil)
}

func describeCertificates(certs []*x509.Certificate, version, host string, roots *x509.CertPool, now time.Time, cache *verifyCache) TLSInfo {
	info := TLSInfo{Version: version, ChainLength: len(certs), CheckedAt: now}
	if len(certs) == 0 {
		info.VerifyError = "the server sent no certificate"
		return info
	}
	for _, c := range certs {
		info.Chain = append(info.Chain, c.Raw)
	}
	leaf := certs[0]
	info.Subject = leaf.Subject.String()
	info.Issuer = leaf.Issuer.String()
	info.DNSNames = append([]string{}, leaf.DNSNames...)
	info.NotAfter = leaf.NotAfter
	info.DaysLeft = int(math.Floor(leaf.NotAfter.Sub(now).Hours() / 24))
	info.Expired = now.After(leaf.NotAfter) || now.Before(leaf.NotBefore)
	info.SHA256 = Fingerprint(leaf)
	info.HostMatches = leaf.VerifyHostname(host) == nil
	info.TraefikDefault = leaf.Subject.CommonName == TraefikDefaultCN

	err := cache.verify(certs, host, roots, now)
	info.Verified = err == nil
	if err != nil {
		info.VerifyError = err.Error()
	}
	return info
}

// Fingerprint is the SHA-256 of the certificate's DER, upper-case hex pairs joined by colons.
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}
