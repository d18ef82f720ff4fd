// Package pki generates the lab's certificates with crypto/x509: one lab CA that the apiserver,
// kubelets (kwok), the routes' TLS Secrets and OpenVPN all chain to, so that tests can pass its
// file as --ca-file and get real verification; plus deliberately wrong certificates for fault
// injection.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Validity of every certificate the lab issues unless a spec says otherwise: long enough for a
// lab that lives for days, short enough to be obviously a lab.
const Validity = 30 * 24 * time.Hour

// Pair is a certificate with its key, in memory and PEM.
type Pair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// Spec describes a certificate to issue.
type Spec struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPs          []string
	Server       bool // extKeyUsage serverAuth
	Client       bool // extKeyUsage clientAuth
	NotBefore    time.Time
	NotAfter     time.Time
}

// NewCA creates a self-signed CA.
func NewCA(commonName string) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"kubectl-lanaccess lab"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * Validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", commonName, err)
	}
	return newPair(der, key)
}

// Issue signs a certificate for spec with p, the issuing CA.
func (p *Pair) Issue(spec Spec) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("key for %s: %w", spec.CommonName, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: spec.CommonName, Organization: spec.Organization},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:     spec.DNSNames,
	}
	if !spec.NotBefore.IsZero() {
		tmpl.NotBefore = spec.NotBefore
	}
	if !spec.NotAfter.IsZero() {
		tmpl.NotAfter = spec.NotAfter
	}
	for _, s := range spec.IPs {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("certificate %s: invalid IP %q", spec.CommonName, s)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	if spec.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if spec.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.Cert, key.Public(), p.Key)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", spec.CommonName, err)
	}
	return newPair(der, key)
}

// SelfSigned issues a leaf that signs itself (what Traefik serves when no router matches, and an
// "unknown CA" fault).
func SelfSigned(spec Spec) (*Pair, error) {
	ca, err := NewCA(spec.CommonName)
	if err != nil {
		return nil, err
	}
	return ca.Issue(spec)
}

// Write stores the pair as dir/name.crt and dir/name.key, readable by root only like every
// file of the lab (its processes all run as root).
func (p *Pair) Write(dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pki dir %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), p.CertPEM, 0o600); err != nil {
		return fmt.Errorf("write %s.crt: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".key"), p.KeyPEM, 0o600); err != nil {
		return fmt.Errorf("write %s.key: %w", name, err)
	}
	return nil
}

// WritePublicKey stores the public key as dir/name.pub (PKIX PEM): the apiserver verifies
// service-account tokens with it.
func (p *Pair) WritePublicKey(dir, name string) error {
	der, err := x509.MarshalPKIXPublicKey(p.Key.Public())
	if err != nil {
		return err
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, name+".pub"), pemBytes, 0o600); err != nil {
		return fmt.Errorf("write %s.pub: %w", name, err)
	}
	return nil
}

// Load reads a pair written by Write.
func Load(dir, name string) (*Pair, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, name+".crt"))
	if err != nil {
		return nil, fmt.Errorf("read %s.crt: %w", name, err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, name+".key"))
	if err != nil {
		return nil, fmt.Errorf("read %s.key: %w", name, err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("pair %s in %s: not PEM", name, dir)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse %s.crt: %w", name, err)
	}
	anyKey, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse %s.key: %w", name, err)
	}
	signer, ok := anyKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("key " + name + " cannot sign")
	}
	return &Pair{Cert: cert, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

func newPair(der []byte, key crypto.Signer) (*Pair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Pair{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		// crypto/rand never fails on Linux; a fixed serial would still be a valid certificate.
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
