// Package workstation is the client side of LAN access: the commands that send one zone to the
// node addresses on Linux, Windows and macOS (client-config), and the checks that this machine's
// resolver really does so (client-check). It never changes the machine it runs on: it prints
// commands and reads state.
package workstation

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// Target is what a workstation must be told: the zone and the addresses of the zone's DNS
// servers, and the addresses a name in the zone must resolve to. In a healthy setup both sets
// are the node addresses (LA101 checks they agree); they are kept apart so that a cluster where
// they differ gives each command the right one.
type Target struct {
	// Zone is the zone the LAN DNS serves, e.g. "apps.example.com" (no trailing dot).
	Zone string
	// Servers are the DNS Service's externalIPs, the resolvers a workstation asks for the zone.
	Servers []netip.Addr
	// Answers are the addresses a name in the zone must resolve to (the proxy's externalIPs).
	Answers []netip.Addr
}

// NewTarget validates and normalises a zone and address lists given as text (flags or the
// cluster's objects): the zone lower-cased without its trailing dot, addresses parsed, sorted and
// without duplicates. Answers default to Servers when empty.
func NewTarget(zone string, servers, answers []string) (Target, error) {
	z, err := NormalizeZone(zone)
	if err != nil {
		return Target{}, err
	}
	srv, err := parseAddrs(servers, "DNS server")
	if err != nil {
		return Target{}, err
	}
	if len(srv) == 0 {
		return Target{}, fmt.Errorf("no DNS server address for zone %s", z)
	}
	ans, err := parseAddrs(answers, "answer")
	if err != nil {
		return Target{}, err
	}
	if len(ans) == 0 {
		ans = srv
	}
	return Target{Zone: z, Servers: srv, Answers: ans}, nil
}

// NormalizeZone checks that zone is a valid DNS name that is not the root, and returns it in the
// form every OS's configuration expects: lower case, no trailing dot.
func NormalizeZone(zone string) (string, error) {
	z := strings.ToLower(strings.TrimSpace(zone))
	if _, ok := dns.IsDomainName(z); !ok || z == "" || z == "." {
		return "", fmt.Errorf("zone %q is not a DNS domain name", zone)
	}
	z = strings.TrimSuffix(z, ".")
	if strings.ContainsAny(z, " \t\"'`$\\;&|<>*") {
		// The zone ends up inside shell and PowerShell commands: refuse anything that could
		// change their meaning rather than trying to quote it for three shells.
		return "", fmt.Errorf("zone %q contains characters that are not allowed in a host name", zone)
	}
	return z, nil
}

func parseAddrs(in []string, what string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range in {
		for part := range strings.SplitSeq(s, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			a, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("%s address %q: %w", what, part, err)
			}
			if a.Zone() != "" {
				return nil, fmt.Errorf("%s address %q: a scoped address cannot be configured as a resolver for a zone", what, part)
			}
			out = append(out, a.Unmap())
		}
	}
	return probe.SortAddrs(out), nil
}

// serversOfFamily returns the servers of one family (4 or 6), in order.
func serversOfFamily(addrs []netip.Addr, family int) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if (family == 4) == a.Is4() {
			out = append(out, a)
		}
	}
	return out
}

func joinAddrs(addrs []netip.Addr, sep string) string { return probe.JoinAddrsSep(addrs, sep) }
