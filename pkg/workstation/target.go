// Package workstation is the client side of LAN access: the commands that send one zone to the
// node addresses on Linux, Windows and macOS (client-config), and the checks that this machine's
// resolver really does so (client-check). It never changes the machine it runs on: it prints
// commands and reads state.
package workstation

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// Target is what a workstation must be told: the zone and the addresses of the zone's DNS
// servers, and the addresses a name in the zone must resolve to. In a healthy setup both sets
// are the node addresses (LA101 checks they agree); they are kept apart so that a cluster where
// they differ gives each command the right one.
type Target struct {
	// Zone is the zone the LAN DNS serves; commands carry its display form ("apps.example.com").
	Zone zone.Zone
	// Servers are the DNS Service's externalIPs, the resolvers a workstation asks for the zone.
	Servers []netip.Addr
	// Answers are the addresses a name in the zone must resolve to (the proxy's externalIPs).
	Answers []netip.Addr
}

// NewTarget validates a zone and address lists given as text (flags or the cluster's objects):
// the zone through zone.Parse, addresses parsed, sorted and without duplicates. Answers default
// to Servers when empty.
func NewTarget(name string, servers, answers []string) (Target, error) {
	z, err := zone.Parse(name)
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
