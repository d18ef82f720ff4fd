package linuxnet

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParsers feeds the same text to every parser: what a pod prints is untrusted, and a
// parser may skip what it does not understand but never panic.
func FuzzParsers(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, i := range ParseIPAddr(s) {
			if i.Name == "" {
				t.Fatalf("interface without a name from %q", s)
			}
		}
		ParseProcRoute(s, false)
		ParseProcRoute(s, true)
		nat := ParseIPTablesSave(s)
		nat.SourceNATFor(netip.MustParsePrefix("10.8.0.0/24"))
		ParseResolvConf(s).ClusterDomain()
		var c OpenVPNConfig
		c.ParseOpenVPNConfig(s)
		c.ParseOpenVPNArgs(strings.Fields(s))
		ParseOpenVPNStatus(s)
		c.ClientPool()
	})
}
