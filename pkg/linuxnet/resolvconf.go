package linuxnet

import (
	"net/netip"
	"strings"
)

// ResolvConf is what /etc/resolv.conf tells a pod's resolver.
type ResolvConf struct {
	Nameservers []netip.Addr
	Search      []string
}

// ParseResolvConf reads resolv.conf; unknown lines are ignored.
func ParseResolvConf(s string) ResolvConf {
	var rc ResolvConf
	for line := range strings.SplitSeq(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[0], ";") {
			continue
		}
		switch f[0] {
		case "nameserver":
			if a, err := netip.ParseAddr(f[1]); err == nil {
				rc.Nameservers = append(rc.Nameservers, a)
			}
		case "search", "domain":
			rc.Search = append(rc.Search, f[1:]...)
		}
	}
	return rc
}

// ClusterDomain reads the cluster domain from a pod's search list ("svc.cluster.local" ->
// "cluster.local"); "" when the list has no "svc." entry (dnsPolicy Default, say).
func (rc ResolvConf) ClusterDomain() string {
	for _, s := range rc.Search {
		if d, ok := strings.CutPrefix(strings.TrimSuffix(s, "."), "svc."); ok && d != "" {
			return d
		}
	}
	return ""
}
