package checks

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
)

// netTarget is one address a workstation may be given: a Service's externalIP with the Service
// port, and the node that carries it, named for findings.
type netTarget struct {
	Addr   netip.AddrPort
	Object string
}

// netServiceTargets lists svc's externalIPs on port, in the Service's order. Addresses that do
// not parse are returned apart (LA101 reports them; the probes cannot dial them).
func netServiceTargets(svc *corev1.Service, port uint16, nodes []corev1.Node) (targets []netTarget, invalid []string) {
	for _, ip := range svc.Spec.ExternalIPs {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			invalid = append(invalid, ip)
			continue
		}
		a = a.Unmap()
		targets = append(targets, netTarget{Addr: netip.AddrPortFrom(a, port), Object: netNodeObject(nodes, a)})
	}
	return targets, invalid
}

// netServicePort returns the Service port numbered want, else the first port named one of names,
// else want itself: the probe then tells what a workstation meets on the standard port.
func netServicePort(svc *corev1.Service, want int32, names ...string) uint16 {
	for _, p := range svc.Spec.Ports {
		if p.Port == want {
			return uint16(p.Port)
		}
	}
	for _, name := range names {
		for _, p := range svc.Spec.Ports {
			if p.Name == name && p.Port > 0 && p.Port < 65536 {
				return uint16(p.Port)
			}
		}
	}
	return uint16(want)
}

// netNodeObject names the node whose InternalIP is addr: "node-2 (10.0.10.12)", or the address
// alone when no node carries it.
func netNodeObject(nodes []corev1.Node, addr netip.Addr) string {
	for _, n := range nodes {
		for _, na := range n.Status.Addresses {
			if na.Type != corev1.NodeInternalIP {
				continue
			}
			if a, err := netip.ParseAddr(na.Address); err == nil && a.Unmap() == addr {
				return fmt.Sprintf("%s (%s)", n.Name, addr)
			}
		}
	}
	return addr.String()
}

func netServiceObject(svc *corev1.Service) string {
	return fmt.Sprintf("Service %s/%s", svc.Namespace, svc.Name)
}

func netTargetAddrs(targets []netTarget) []netip.Addr {
	out := make([]netip.Addr, 0, len(targets))
	for _, t := range targets {
		out = append(out, t.Addr.Addr())
	}
	return out
}

// externalAddrs parses a Service's externalIPs, skipping invalid ones.
func externalAddrs(svc *corev1.Service) []netip.Addr {
	if svc == nil {
		return nil
	}
	var out []netip.Addr
	for _, ip := range svc.Spec.ExternalIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			out = append(out, a.Unmap())
		}
	}
	return out
}
