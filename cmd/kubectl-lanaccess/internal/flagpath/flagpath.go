// Package flagpath builds the LAN path the DNS and HTTPS checks walk from what a person without
// cluster access knows: the node addresses, the zone and a host in it (doctor --addresses,
// monitor --addresses). The addresses stand for both Services' externalIPs and the zone's
// answers, on the ports a workstation uses (53 and 443).
package flagpath

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/netpath"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/proxyroute"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// Without cluster access the Services cannot be read: the path checks' findings and fixes name
// them with these placeholders, as the remedies do for any object they cannot name.
const (
	DNSObject   = "Service <namespace>/<dns-service>"
	ProxyObject = "Service <namespace>/<proxy-service>"
	Namespace   = "<namespace>"
)

// Source says where such a path came from, for report headers and logs.
const Source = "flags (--addresses, --zone): the cluster is not read"

// HostFlagSource is the probe host's source when --host named it; otherwise the probe host is
// the zone apex.
const HostFlagSource = "--host"

// HostGiven reports whether the path's probe host came from --host.
func HostGiven(p netpath.Path) bool { return p.Host.Source == HostFlagSource }

// FromAddresses builds the LAN path from flags alone (--addresses, --zone, --host), for
// people without cluster access: the addresses stand for both Services' externalIPs and the
// zone's answers, on the standard ports a workstation uses (53 and 443).
func FromAddresses(addrs []netip.Addr, z zone.Zone, host string) netpath.Path {
	p := netpath.Path{
		Zone:        z,
		Host:        proxyroute.ProbeHost{Name: z.String(), Source: "zone apex (no --host)"},
		DNSObject:   DNSObject,
		ProxyObject: ProxyObject,
		ProxyAddrs:  probe.SortAddrs(append([]netip.Addr(nil), addrs...)),
		Fixes:       netpath.Fixes{DNSNamespace: Namespace, ConfigMapNamespace: Namespace},
	}
	if host != "" {
		p.Host = proxyroute.ProbeHost{Name: host, Source: HostFlagSource}
	}
	for _, a := range p.ProxyAddrs {
		p.DNS = append(p.DNS, netpath.Target{Addr: netip.AddrPortFrom(a, 53), Object: a.String()})
		p.HTTPS = append(p.HTTPS, netpath.Target{Addr: netip.AddrPortFrom(a, 443), Object: a.String()})
		if a.Is4() {
			p.Expected = append(p.Expected, a)
		} else {
			p.ExpectedAAAA = append(p.ExpectedAAAA, a)
		}
	}
	return p
}

// ParseAddresses reads --addresses: each entry a node's LAN address, written canonically
// (it becomes a metric label and is printed in commands), listed once. Entries may also be
// comma-separated inside one value (YAML lists in --config arrive joined).
func ParseAddresses(in []string) ([]netip.Addr, error) {
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, s := range in {
		for part := range strings.SplitSeq(s, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			a, err := NodeAddress(part)
			if err != nil {
				return nil, err
			}
			if seen[a] {
				return nil, fmt.Errorf("%s is listed twice", a)
			}
			seen[a] = true
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no address given")
	}
	return probe.SortAddrs(out), nil
}

// NodeAddress accepts what a node can carry on the LAN and a workstation can be given: a
// unicast address in its canonical form (no IPv4-mapped form, no scope, no leading zeros,
// which netip already refuses), never loopback, unspecified, multicast or broadcast.
func NodeAddress(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return netip.Addr{}, fmt.Errorf("%q is not an IP address: %v", s, err)
	case a.Zone() != "":
		return netip.Addr{}, fmt.Errorf("%q has a scope (%%%s): a workstation cannot be given a scoped address", s, a.Zone())
	case a.Is4In6():
		return netip.Addr{}, fmt.Errorf("%q is an IPv4-mapped address: write it as %s", s, a.Unmap())
	case a.String() != strings.ToLower(s):
		return netip.Addr{}, fmt.Errorf("%q is not written canonically: write it as %s", s, a)
	case a.IsLoopback(), a.IsUnspecified(), a.IsMulticast(), a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return netip.Addr{}, fmt.Errorf("%s is not a node's LAN address (loopback, unspecified, multicast or broadcast)", a)
	}
	return a, nil
}
