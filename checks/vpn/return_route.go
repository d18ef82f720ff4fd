package vpn

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// A pool that is not masqueraded still gets its replies when the cluster routes it back to
// the VPN pod: the replying pod's node has a route to the pool (learnt by BGP, as Calico's
// bird installs it with "proto bird", or static) towards the VPN pod's node, and that node a
// route on to the pod. The nodes' routing tables, read through their hostNetwork pods, show
// it; so does a pod answering this machine through the tunnel.

// returnRoute says whether replies to the pool find the VPN pod.
type returnRoute struct {
	// Back: the cluster routes the pool back; Known: the answer is proven either way.
	Back, Known bool
	How         []string
	Unknown     []string
}

func routedBack(run *facts.Run, p *facts.Pod) returnRoute {
	pool := p.NAT.Pool
	if h := run.Client.Hop(facts.HopPodIP); h != nil && h.State == facts.HopAnswered {
		if r := run.Client.Routes.For(h.Addr); r == nil || r.ThroughTunnel {
			return returnRoute{Back: true, Known: true, How: []string{"from this machine a pod answered through the tunnel"}}
		}
	}
	var rr returnRoute
	vpnNode, tgt := p.Node, run.TargetNode
	switch {
	case !pool.IsValid():
		rr.Unknown = append(rr.Unknown, "the client pool is unknown")
		return rr
	case run.Targets.PodNode == "":
		rr.Unknown = append(rr.Unknown, "the node of the ladder's pod is unknown")
		return rr
	case tgt.Err != nil:
		rr.Unknown = append(rr.Unknown, "node "+tgt.Node+" (the ladder's pod's) was not read: "+tgt.Err.Error())
		return rr
	}
	back := routeToPool(tgt, pool)
	switch {
	case back == nil && hasDefault(tgt):
		rr.Known = true
		rr.How = append(rr.How, fmt.Sprintf("node %s (the ladder's pod's) has no route to %s but its default route%s: replies leave the cluster network, unless the network beyond routes the pool to node %s", tgt.Node, pool, defaultVia(tgt), vpnNode.Node))
		return rr
	case back == nil:
		rr.Known = true
		rr.How = append(rr.How, fmt.Sprintf("node %s (the ladder's pod's) has neither a route to %s nor a default route: its replies to the pool are dropped there", tgt.Node, pool))
		return rr
	}
	rr.How = append(rr.How, routeEvidence(tgt, *back))
	if tgt.Node == vpnNode.Node {
		rr.Back, rr.Known = true, true
		return rr
	}
	switch onward := routeToPool(vpnNode, pool); {
	case vpnNode.Err != nil:
		rr.Unknown = append(rr.Unknown, "node "+vpnNode.Node+" (the VPN pod's) was not read to see its route on to the pod: "+vpnNode.Err.Error())
	case onward == nil && hasDefault(vpnNode):
		rr.Known = true
		rr.How = append(rr.How, fmt.Sprintf("node %s (the VPN pod's) has no route to %s but its default route%s: what node %s sends there goes nowhere", vpnNode.Node, pool, defaultVia(vpnNode), tgt.Node))
	case onward == nil:
		rr.Known = true
		rr.How = append(rr.How, fmt.Sprintf("node %s (the VPN pod's) has neither a route to %s nor a default route: what node %s sends there is dropped", vpnNode.Node, pool, tgt.Node))
	default:
		rr.Known = true
		if why := gatewayIgnored(vpnNode, *onward); why != "" {
			rr.How = append(rr.How, routeEvidence(vpnNode, *onward)+", but "+why)
			break
		}
		rr.Back = true
		rr.How = append(rr.How, routeEvidence(vpnNode, *onward))
	}
	return rr
}

// gatewayIgnored says why the kernel does not use a route's gateway ("" when it does, or when
// that cannot be told). A gateway is used only when the route the kernel resolves it through is
// link-scope (net/ipv4/route.c, rt_set_nexthop: rt_gw4 is set only for RT_SCOPE_LINK); the ptp
// CNI plugin routes a pod IP with scope host (containernetworking/plugins pkg/ip AddHostRoute),
// so a route to the pool "via <pod IP>" without onlink makes the node look for each pool
// address on the device itself, and nothing answers there (proven in the lab:
// lab/e2e/vpn_test.go TestVPNTraceSeesAReturnRouteWhoseGatewayTheKernelIgnores).
func gatewayIgnored(n facts.NodeRead, r linuxnet.Route) string {
	if !r.Gateway.IsValid() || r.Gateway.IsUnspecified() {
		return ""
	}
	gw := r.Gateway.String()
	for _, l := range n.IPRoutes {
		if strings.HasPrefix(l, r.Dest.String()+" ") && strings.Contains(" "+l+" ", " onlink ") {
			return ""
		}
	}
	for _, l := range n.IPRoutes {
		f := strings.Fields(l)
		if len(f) > 0 && (f[0] == gw || f[0] == gw+"/32") && strings.Contains(" "+l+" ", " scope host ") {
			return fmt.Sprintf("its gateway %s is routed with scope host (%s), which the kernel does not use as a gateway: node %s looks for each address of %s on %s itself and the replies are lost (the route needs onlink, or a link-scope route to %s)",
				gw, strings.TrimSpace(l), n.Node, r.Dest, r.Iface, gw)
		}
	}
	return ""
}

// routeToPool is the node's most specific route that covers the whole pool, not the default.
func routeToPool(n facts.NodeRead, pool netip.Prefix) *linuxnet.Route {
	var best *linuxnet.Route
	for i, r := range n.Routes {
		if r.Default() || r.Dest.Bits() > pool.Bits() || !r.Dest.Contains(pool.Addr()) {
			continue
		}
		if best == nil || r.Dest.Bits() > best.Dest.Bits() {
			best = &n.Routes[i]
		}
	}
	return best
}

// routeEvidence is a route in words, with `ip route`'s line when it was read (it names the
// protocol: bird is BGP).
func routeEvidence(n facts.NodeRead, r linuxnet.Route) string {
	s := fmt.Sprintf("node %s routes %s", n.Node, r.Dest)
	if r.Gateway.IsValid() && !r.Gateway.IsUnspecified() {
		s += " via " + r.Gateway.String()
	}
	s += " dev " + r.Iface
	var sSb92 strings.Builder
	for _, l := range n.IPRoutes {
		if strings.HasPrefix(l, r.Dest.String()+" ") {
			sSb92.WriteString(" (" + strings.TrimSpace(l) + ")")
			if strings.Contains(l, "proto bird") {
				sSb92.WriteString(", advertised by BGP")
			}
			break
		}
	}
	s += sSb92.String()
	return s
}

// hasDefault reports whether the node has a default route (a node without one, like the lab's,
// drops what it has no route for instead of sending it out).
func hasDefault(n facts.NodeRead) bool {
	for _, r := range n.Routes {
		if r.Default() {
			return true
		}
	}
	return false
}

func defaultVia(n facts.NodeRead) string {
	for _, r := range n.Routes {
		if r.Default() && r.Gateway.IsValid() {
			return " via " + r.Gateway.String()
		}
	}
	return ""
}

// masqueradeFix masquerades the pool in the pod's uplink.
func masqueradeFix(p *facts.Pod) string {
	return masqueradeFixYAML(p.Owner, p.Image(), p.NAT.Pool, p.Tunnel.Uplink)
}
