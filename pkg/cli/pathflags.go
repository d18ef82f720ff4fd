package cli

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/netpath"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/valid"
	"github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// Without cluster access the Services cannot be read: the path checks' findings and fixes name
// them with these placeholders, as the remedies do for any object they cannot name.
const (
	offlineDNSObject   = "Service <namespace>/<dns-service>"
	offlineProxyObject = "Service <namespace>/<proxy-service>"
	offlineNamespace   = "<namespace>"
)

// offlineSource says where an offline path came from, for report headers and logs.
const offlineSource = "flags (--addresses, --zone): the cluster is not read"

// pathFromAddresses builds the LAN path from flags alone (--addresses, --zone, --host), for
// people without cluster access: the addresses stand for both Services' externalIPs and the
// zone's answers, on the standard ports a workstation uses (53 and 443).
func pathFromAddresses(addrs []netip.Addr, zone, host string) netpath.Path {
	p := netpath.Path{
		Zone:        zone,
		Host:        kube.ProbeHost{Name: zone, Source: "zone apex (no --host)"},
		DNSObject:   offlineDNSObject,
		ProxyObject: offlineProxyObject,
		ProxyAddrs:  probe.SortAddrs(append([]netip.Addr(nil), addrs...)),
		Fixes:       netpath.Fixes{DNSNamespace: offlineNamespace, ConfigMapNamespace: offlineNamespace},
	}
	if host != "" {
		p.Host = kube.ProbeHost{Name: host, Source: "--host"}
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

// parseNodeAddresses reads --addresses: each entry a node's LAN address, written canonically
// (it becomes a metric label and is printed in commands), listed once. Entries may also be
// comma-separated inside one value (YAML lists in --config arrive joined).
func parseNodeAddresses(in []string) ([]netip.Addr, error) {
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, s := range in {
		for _, part := range strings.Split(s, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			a, err := nodeAddress(part)
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

// nodeAddress accepts what a node can carry on the LAN and a workstation can be given: a
// unicast address in its canonical form (no IPv4-mapped form, no scope, no leading zeros,
// which netip already refuses), never loopback, unspecified, multicast or broadcast.
func nodeAddress(s string) (netip.Addr, error) {
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

// offlineZoneAndHost validates --zone (required) and --host (optional, inside the zone: it is
// the name the zone's template must answer).
func offlineZoneAndHost(zone, host string) (string, string, error) {
	if zone == "" {
		return "", "", usageErr("--addresses needs --zone: the zone the addresses serve (e.g. --zone apps.example.com)")
	}
	z, err := workstation.NormalizeZone(zone)
	if err != nil {
		return "", "", usageErr("invalid --zone: %v", err)
	}
	if host == "" {
		return z, "", nil
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if err := valid.Hostname(h); err != nil {
		return "", "", usageErr("invalid --host: %v", err)
	}
	if h != z && !strings.HasSuffix(h, "."+z) {
		return "", "", usageErr("--host %s is not in the zone %s: give a name that ends in .%s", h, z, z)
	}
	return z, h, nil
}
