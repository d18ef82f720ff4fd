package probe

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"sync"
	"time"
)

// verifyCache remembers the chains one HTTPSClient verified: the addresses of one proxy all
// serve the same chain for the same host, and verifying it (a signature check per link, the
// chain built against the roots) is the same work each time. A chain is taken from the cache
// only for the same host, roots and certificates, and only while the instant judged lies in
// every validity window of the chain that verified, where x509's verification would give the
// same answer (its only input that changes within a run is the time). Failures are not kept:
// they are verified again (a broken setup's run is not the one to make fast).
type verifyCache struct {
	mu   sync.Mutex
	good map[verifyKey]validity
}

type verifyKey struct {
	host  string
	roots *x509.CertPool
	chain [sha256.Size]byte
}

// validity is when a verified chain stays verified: the latest NotBefore and the earliest
// NotAfter of the certificates of the chain that verified, root included.
type validity struct{ from, to time.Time }

// maxVerifiedChains bounds the cache (a run meets one chain per host and proxy, a handful).
const maxVerifiedChains = 64

// verify is x509 verification of certs (leaf first) for host at now against roots (nil: the
// system roots), answered from the cache when the same chain verified before. A nil cache
// always verifies.
func (c *verifyCache) verify(certs []*x509.Certificate, host string, roots *x509.CertPool, now time.Time) error {
	var key verifyKey
	if c != nil {
		key = verifyKey{host: host, roots: roots, chain: chainDigest(certs)}
		c.mu.Lock()
		v, ok := c.good[key]
		c.mu.Unlock()
		if ok && !now.Before(v.from) && !now.After(v.to) {
			return nil
		}
	}
	inter := x509.NewCertPool()
	for _, cert := range certs[1:] {
		inter.AddCert(cert)
	}
	chains, err := certs[0].Verify(x509.VerifyOptions{
		DNSName:       host,
		Roots:         roots,
		Intermediates: inter,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil || c == nil || len(chains) == 0 {
		return err
	}
	v := validity{from: chains[0][0].NotBefore, to: chains[0][0].NotAfter}
	for _, cert := range chains[0][1:] {
		if cert.NotBefore.After(v.from) {
			v.from = cert.NotBefore
		}
		if cert.NotAfter.Before(v.to) {
			v.to = cert.NotAfter
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.good == nil {
		c.good = map[verifyKey]validity{}
	}
	if len(c.good) < maxVerifiedChains {
		c.good[key] = v
	}
	return nil
}

// chainDigest identifies a served chain: the SHA-256 of its certificates' DER, in order, each
// preceded by its length.
func chainDigest(certs []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, cert := range certs {
		_, _ = h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(cert.Raw))))
		_, _ = h.Write(cert.Raw)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
