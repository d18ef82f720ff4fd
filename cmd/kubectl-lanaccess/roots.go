package main

import (
	"crypto/x509"
	"sync"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The Mozilla roots, used only where the system offers none: the container image (FROM an empty
// base, no /etc/ssl) verifies a proxy certificate that a public CA signed, as a workstation
// would. On a system with roots, or with --ca-file, nothing changes (x509.SetFallbackRoots).
//
// They are installed before a command that may open a TLS connection runs, not at init (as
// the package golang.org/x/crypto/x509roots/fallback does): parsing them costs every start-up
// about 1.4 ms and 650 KB (GODEBUG=inittrace=1), which `version`, `explain`, `manifests`,
// `completion` and `help` never use; nor where the system has roots (systemHasRoots).

// offlineCommands open no connection: they start without the fallback roots.
var offlineCommands = map[string]bool{"version": true, "explain": true, "manifests": true, "completion": true, "help": true}

// needsRoots reports whether the command line args may open a TLS connection: any command but
// the offline ones, and any command line that does not start with one (flags first: unsure).
func needsRoots(args []string) bool {
	return len(args) == 0 || !offlineCommands[args[0]]
}

// installFallbackRoots hands the embedded roots to crypto/x509, once.
var installFallbackRoots = sync.OnceFunc(func() {
	p := x509.NewCertPool()
	for c := range bundle.Roots() {
		cert, err := x509.ParseCertificate(c.Certificate)
		if err != nil {
			panic(err) // the bundle is generated from parsed certificates
		}
		if c.Constraint == nil {
			p.AddCert(cert)
		} else {
			p.AddCertWithConstraint(cert, c.Constraint)
		}
	}
	x509.SetFallbackRoots(p)
})
