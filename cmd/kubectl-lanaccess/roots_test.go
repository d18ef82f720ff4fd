package main

import (
	"crypto/x509"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Where the system has no roots (the container image: no /etc/ssl), a certificate that chains
// to a public root still verifies: the binary carries the fallback roots. The check runs in a
// child process whose system roots are made unavailable before it starts (the system roots load
// once, on first use).
func TestPublicRootsVerifyWithoutSystemRoots(t *testing.T) {
	if os.Getenv("LANACCESS_ROOTS_CHILD") == "1" {
		require.True(t, needsRoots([]string{"doctor"}), "main installs the roots before doctor runs")
		require.False(t, systemHasRoots(), "no system roots in this child")
		installFallbackRoots()
		verified := 0
		for root := range bundle.Roots() {
			if root.Constraint != nil {
				continue
			}
			cert, err := x509.ParseCertificate(root.Certificate)
			require.NoError(t, err)
			_, err = cert.Verify(x509.VerifyOptions{}) // nil Roots: the system's, else the fallback
			require.NoError(t, err, "%s", cert.Subject)
			verified++
		}
		require.Greater(t, verified, 100)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPublicRootsVerifyWithoutSystemRoots$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LANACCESS_ROOTS_CHILD=1", "SSL_CERT_FILE=/nonexistent", "SSL_CERT_DIR=/nonexistent")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// Only the commands that never connect start without the roots; anything else, or a command line
// that starts with a flag, gets them.
func TestOnlyOfflineCommandsSkipTheRoots(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"explain", "LA101"}, {"manifests", "rbac"}, {"completion", "bash"}, {"help"}} {
		require.False(t, needsRoots(args), "%v", args)
	}
	for _, args := range [][]string{{"doctor"}, {"vpn-trace"}, {"client-check"}, {"client-config"}, {"monitor"}, {"cleanup"}, {"__complete", "doctor", "-n", ""}, {"--context", "x", "version"}, {}} {
		require.True(t, needsRoots(args), "%v", args)
	}
}

// The fallback roots are skipped only where crypto/x509 will find a system bundle: a file with a
// certificate; a missing, empty or certificate-less file, or roots forced by GODEBUG, keep them.
func TestSystemHasRoots(t *testing.T) {
	dir := t.TempDir()
	pem := dir + "/bundle.pem"
	require.NoError(t, os.WriteFile(pem, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o600))
	empty := dir + "/empty.pem"
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	t.Setenv("GODEBUG", "")
	for file, want := range map[string]bool{pem: true, empty: false, dir + "/missing.pem": false} {
		t.Setenv("SSL_CERT_FILE", file)
		require.Equal(t, want, systemHasRoots(), file)
	}
	t.Setenv("SSL_CERT_FILE", pem)
	t.Setenv("GODEBUG", "x509usefallbackroots=1")
	require.False(t, systemHasRoots())
}
