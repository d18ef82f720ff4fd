package labctl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// Process names of the "internet" namespace's services.
const (
	ProcInternetDNS = "internet-dns"
	ProcInternetWeb = "internet-web"
)

// internetSpecs writes the public DNS zones and returns the public DNS and web processes. The
// public zone says *.apps.example.com is the VPN-only address, as in the seed: only a LAN
// client that asks the lab's zone DNS gets the node addresses.
func internetSpecs(l layout.Layout, bins binaries.Set) ([]procs.Spec, error) {
	dir := l.Path("internet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	zones := map[string]string{
		"example.org": fmt.Sprintf(`$ORIGIN example.org.
@   3600 IN SOA ns.example.org. hostmaster.example.org. 2026113001 7200 3600 1209600 3600
@   3600 IN NS  ns.example.org.
ns  3600 IN A   %[1]s
@   300  IN A   %[2]s
www 300  IN A   %[2]s
`, l.InternetDNS, l.InternetWeb),
		"example.com": fmt.Sprintf(`$ORIGIN example.com.
@      3600 IN SOA ns.example.com. hostmaster.example.com. 2026113001 7200 3600 1209600 3600
@      3600 IN NS  ns.example.com.
ns     3600 IN A   %[1]s
@      300  IN A   %[2]s
auth   300  IN A   %[2]s
apps   300  IN A   %[3]s
*.apps 300  IN A   %[3]s
`, l.InternetDNS, l.InternetWeb, l.AppsPublicIP),
	}
	var corefile strings.Builder
	for zone, content := range zones {
		path := filepath.Join(dir, "db."+zone)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return nil, err
		}
		fmt.Fprintf(&corefile, "%s:53 {\n    bind %s\n    file %s\n}\n", zone, l.InternetDNS, path)
	}
	// Any other name does not exist: the lab's internet has no root to recurse to, and nothing
	// may ever be forwarded outside.
	fmt.Fprintf(&corefile, ".:53 {\n    bind %s\n    template ANY ANY {\n        rcode NXDOMAIN\n    }\n}\n", l.InternetDNS)
	conf := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(conf, []byte(corefile.String()), 0o600); err != nil {
		return nil, err
	}
	return []procs.Spec{
		{Name: ProcInternetDNS, NS: l.Internet.NS, Dir: dir, Argv: []string{bins.CoreDNSBin(), "-conf", conf}},
		{Name: ProcInternetWeb, NS: l.Internet.NS, Dir: dir, Argv: []string{l.LabBinary(), "serve-http",
			"--listen", l.InternetWeb + ":80", "--text", "Example Domain (the lab's internet)"}},
	}, nil
}
