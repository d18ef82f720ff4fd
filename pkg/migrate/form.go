// Package migrate plans the way from the externalIPs setup to a form that keeps its properties
// after Kubernetes removes Service.spec.externalIPs (KEP-5707): the nodes' own LAN addresses
// as the entry points, one address list, the zone unchanged. A plan is built from what
// discovery read (pkg/kube's Setup) as typed objects and chart values; the command layer
// prints it.
package migrate

import (
	"fmt"
	"slices"
	"strings"
)

// Form is where the setup goes.
type Form string

// The forms `migrate --to` names.
const (
	// HostPort: the proxy and the DNS as DaemonSets with hostPorts on the nodes that carry
	// the addresses; the CNI's portmap plugin forwards the node's port to the pod.
	HostPort Form = "hostport"
	// ServiceLB: type LoadBalancer served by k3s's ServiceLB (klipper-lb).
	ServiceLB Form = "servicelb"
	// CiliumNodeIPAM: type LoadBalancer with loadBalancerClass io.cilium/node.
	CiliumNodeIPAM Form = "cilium-node-ipam"
	// MetalLB is named only to be refused with the reason.
	MetalLB Form = "metallb"
)

// Forms are the values --to accepts, in the order help lists them.
var Forms = []Form{HostPort, ServiceLB, CiliumNodeIPAM}

// Refused are forms --to names that are not generated, each with why.
var Refused = map[Form]string{
	// MetalLB allocates from IPAddressPools the operator reserves and announces them itself
	// (ARP/NDP from a speaker, or BGP): metallb/metallb website/content/concepts/_index.md,
	// "Address allocation": "MetalLB cannot create IP addresses out of thin air, so you do
	// have to give it pools of IP addresses that it can use ... it will only ever hand out IPs
	// that are part of its configured pools". The addresses are a range of the LAN set aside
	// for it, announced by its speaker, not the addresses the nodes own: the setup's property
	// (the nodes' own addresses, no reserved range) is what MetalLB gives up.
	MetalLB: "MetalLB hands out addresses from pools reserved for it and announces them itself; it cannot give a Service the nodes' own LAN addresses, which is what this setup keeps (use --to hostport)",
}

// ParseForm reads --to: a form that is generated, else an error saying why not.
func ParseForm(s string) (Form, error) {
	f := Form(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(Forms, f) {
		return f, nil
	}
	if why, ok := Refused[f]; ok {
		return "", fmt.Errorf("--to %s: %s", f, why)
	}
	names := make([]string, 0, len(Forms))
	for _, f := range Forms {
		names = append(names, string(f))
	}
	return "", fmt.Errorf("--to %q: not a form; use %s", s, strings.Join(names, ", "))
}
