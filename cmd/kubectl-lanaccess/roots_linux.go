package main

import (
	"bytes"
	"os"
)

// systemCertFiles are where crypto/x509 looks for the system's root bundle on Linux, in its
// order, stopping at the first file it can read (Go 1.26, crypto/x509/root_linux.go certFiles
// and root_unix.go loadSystemRoots; SSL_CERT_FILE replaces the list).
var systemCertFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// systemHasRoots reports whether the file crypto/x509 will load holds a PEM certificate: then
// the system roots are available and crypto/x509 never uses the fallback ones (root.go,
// initSystemRoots), so parsing them would be wasted (about 1.4 ms and 650 KB per run). Any
// doubt (no such file, an unreadable one, no certificate in it, the roots forced by
// GODEBUG=x509usefallbackroots=1) answers false: the fallback roots are installed as before.
// The certificate directories, which crypto/x509 also reads, are not looked at: missing them
// only installs roots that are then not used.
func systemHasRoots() bool {
	if bytes.Contains([]byte(os.Getenv("GODEBUG")), []byte("x509usefallbackroots=1")) {
		return false
	}
	files := systemCertFiles
	if f := os.Getenv("SSL_CERT_FILE"); f != "" {
		files = []string{f}
	}
	for _, f := range files {
		data, err := os.ReadFile(f) //nolint:gosec // the paths crypto/x509 itself reads
		if err == nil {
			return bytes.Contains(data, []byte("-----BEGIN CERTIFICATE-----"))
		}
	}
	return false
}
