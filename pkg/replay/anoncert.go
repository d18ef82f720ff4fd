package replay

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// certDomains notes the registered domains a bundle's certificates name (their subjects' common
// names and DNS SANs), so that those names are replaced wherever they appear, a certificate for
// another host than the one asked included.
func (a *anonymizer) certDomains(certs [][]byte) {
	for _, der := range certs {
		c, err := x509.ParseCertificate(der)
		if err != nil || c.Subject.CommonName == probe.TraefikDefaultCN {
			continue // Traefik's own names (<hash>.<hash>.traefik.default) are no one's
		}
		for _, n := range append([]string{c.Subject.CommonName}, c.DNSNames...) {
			n = strings.TrimPrefix(n, "*.")
			if strings.Contains(n, ".") && !strings.ContainsAny(n, " :") && !strings.HasSuffix(n, ".svc") {
				a.addDomain(n)
			}
		}
	}
}

// certificates re-issues every certificate as a stand-in that carries no original name: the
// common name mapped (a DNS name or an address as any text, another name as certN, but for
// Traefik's default certificate and the tool's own), the DNS SANs mapped as any text, the IP
// SANs as any address; the other name fields, e-mail and URI SANs dropped; the validity, key
// usages and CA constraints kept. Each subject gets one new key (ECDSA P-256) and a
// certificate is signed by its issuer's, so a stand-in chain still chains. What the checks
// judge from a certificate (host match, dates, Traefik's default) is unchanged; the
// fingerprints are the stand-ins'. cns maps each original common name to its stand-in (a
// verification error quotes them). A certificate that cannot be re-issued drops them all
// (nil: the replay then uses the recorded judgement, anonymized as text).
func (a *anonymizer) certificates(certs [][]byte) (out [][]byte, cns map[string]string) {
	if len(certs) == 0 {
		return nil, nil
	}
	keys := map[string]*ecdsa.PrivateKey{}
	keyFor := func(name pkix.Name) (*ecdsa.PrivateKey, error) {
		id := name.String()
		if k, ok := keys[id]; ok {
			return k, nil
		}
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		keys[id] = k
		return k, err
	}
	cns = map[string]string{}
	for _, der := range certs {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, nil
		}
		stand, err := a.reissue(c, cns, keyFor)
		if err != nil {
			return nil, nil
		}
		out = append(out, stand)
	}
	return out, cns
}

func (a *anonymizer) reissue(c *x509.Certificate, cns map[string]string, keyFor func(pkix.Name) (*ecdsa.PrivateKey, error)) ([]byte, error) {
	subject, issuer := pkix.Name{CommonName: a.commonName(c.Subject.CommonName, cns)}, pkix.Name{CommonName: a.commonName(c.Issuer.CommonName, cns)}
	key, err := keyFor(subject)
	if err != nil {
		return nil, err
	}
	signer, err := keyFor(issuer)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: subject,
		NotBefore: c.NotBefore, NotAfter: c.NotAfter,
		KeyUsage: c.KeyUsage, ExtKeyUsage: c.ExtKeyUsage,
		BasicConstraintsValid: c.BasicConstraintsValid, IsCA: c.IsCA, MaxPathLen: c.MaxPathLen, MaxPathLenZero: c.MaxPathLenZero,
		DNSNames: a.texts(c.DNSNames),
	}
	for _, ip := range c.IPAddresses {
		if addr, ok := netip.AddrFromSlice(ip); ok {
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.IP(a.addr(addr.Unmap()).AsSlice()))
		}
	}
	parent := &x509.Certificate{Subject: issuer}
	if c.Subject.String() == c.Issuer.String() {
		parent = tmpl
	}
	return x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
}

// commonName is a certificate name's stand-in (cns keeps those given).
func (a *anonymizer) commonName(cn string, cns map[string]string) string {
	if r, ok := cns[cn]; ok {
		return r
	}
	var r string
	switch {
	case cn == "" || cn == probe.TraefikDefaultCN || strings.Contains(cn, "lanaccess"):
		r = cn
	case domainToken().MatchString(cn) && !strings.Contains(cn, " "), ipv4Text().MatchString(cn):
		r = a.text(cn)
	default:
		r = fmt.Sprintf("cert%d", len(cns)+1)
	}
	cns[cn] = r
	return r
}

// standInTLS rewrites an anonymized HTTPS reply's judgement of its chain from the stand-in
// certificates (subject, issuer, names, fingerprint...), as the replay will judge them; the
// TLS version and the verification stay the recorded ones, the common names the verification
// error quotes replaced.
func (a *anonymizer) standInTLS(reply json.RawMessage, certs [][]byte, chain []int, host string, cns *strings.Replacer, recorded time.Time) json.RawMessage {
	var r probe.HTTPSReply
	if json.Unmarshal(reply, &r) != nil {
		return reply
	}
	served := make([]*x509.Certificate, 0, len(chain))
	for _, i := range chain {
		c, err := x509.ParseCertificate(certs[i])
		if err != nil {
			return reply
		}
		served = append(served, c)
	}
	at := r.TLS.CheckedAt
	if at.IsZero() {
		at = recorded
	}
	info := probe.DescribeCertificates(served, r.TLS.Version, host, nil, at)
	info.Verified, info.VerifyError = r.TLS.Verified, cns.Replace(r.TLS.VerifyError)
	r.TLS = info
	out, err := json.Marshal(r)
	if err != nil {
		return reply
	}
	return out
}
