package linuxnet

import (
	"net/netip"
	"strings"
)

// ParseOpenVPNStatus returns the virtual addresses of the clients connected now, from an
// OpenVPN status file in any of its formats: version 1 ("ROUTING TABLE" section, comma
// separated), 2 ("ROUTING_TABLE,addr,...") or 3 (the same, tab separated).
func ParseOpenVPNStatus(s string) []netip.Addr {
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	add := func(field string) {
		field, _, _ = strings.Cut(field, "/") // iroute entries carry a prefix ("10.8.1.0/24")
		if a, err := netip.ParseAddr(strings.TrimSpace(field)); err == nil && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	inV1Table := false
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimRight(line, "\r")
		f := strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == '\t' })
		switch {
		case len(f) == 0:
		case f[0] == "ROUTING_TABLE" && len(f) > 1:
			add(f[1])
		case line == "ROUTING TABLE":
			inV1Table = true
		case line == "GLOBAL STATS" || line == "END":
			inV1Table = false
		case inV1Table && f[0] != "Virtual Address":
			add(f[0])
		}
	}
	return out
}
