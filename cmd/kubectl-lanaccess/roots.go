package main

// The Mozilla roots, used only where the system offers none: the container image (FROM an empty
// base, no /etc/ssl) verifies a proxy certificate that a public CA signed, as a workstation
// would. On a system with roots, or with --ca-file, nothing changes (x509.SetFallbackRoots).
import _ "golang.org/x/crypto/x509roots/fallback"
