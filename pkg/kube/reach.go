package kube

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// AddressForm is how the LAN addresses reach a role's pods (issue 26: what stays after
// Service.spec.externalIPs, deprecated since Kubernetes 1.36, KEP-5707).
type AddressForm string

const (
	// FormExternalIPs: the Service's spec.externalIPs, captured by kube-proxy on the node that
	// carries each address.
	FormExternalIPs AddressForm = "externalIPs"
	// FormHostPort: the pods map hostPorts; the CNI's portmap plugin DNATs the node's own
	// addresses to the pod (containernetworking/plugins v1.10.0
	// plugins/meta/portmap/portmap_iptables.go: CNI-HOSTPORT-DNAT from PREROUTING and OUTPUT,
	// `-m addrtype --dst-type LOCAL`, `-d HostIP` only when the port names one). The addresses
	// are those of the nodes where the pods run.
	FormHostPort AddressForm = "hostPort"
	// FormLoadBalancer: type LoadBalancer; the addresses are status.loadBalancer.ingress, as
	// handed out by the implementation named in Reach.LB.
	FormLoadBalancer AddressForm = "LoadBalancer"
)

// Load-balancer implementations doctor recognises.
const (
	LBServiceLB   = "k3s ServiceLB (klipper-lb)"
	LBCiliumNode  = "Cilium node IPAM"
	LBMetalLB     = "MetalLB"
	ciliumNodeLB  = "io.cilium/node"
	svclbName     = "svccontroller.k3s.cattle.io/svcname"
	svclbNS       = "svccontroller.k3s.cattle.io/svcnamespace"
	svclbRootNS   = "kube-system"
	metallbPrefix = "metallb.io/"
	metallbOld    = "metallb.universe.tf/"
)

// Reach is where a role (the proxy, the DNS) is reachable from the LAN: the form, the
// addresses and where each was read. Discovery fills it once (Setup.ProxyReach, DNSReach);
// the checks compare the three lists "where the proxy is reachable, where the DNS is
// reachable, what the zone answers".
type Reach struct {
	Form AddressForm
	// Addresses in the order read. For FormHostPort, the nodes where a Ready pod maps the
	// role's first port (443/TCP, 53/UDP).
	Addresses []ReachAddr
	// Ports are the role's ports (80/TCP, 443/TCP; 53/UDP, 53/TCP) as "443/TCP".
	Ports []string
	// Pods are the pods behind a hostPort form (one per pod, ready or not): which ports each
	// maps on its node.
	Pods []HostPortPod
	// LB is the load-balancer implementation (FormLoadBalancer only).
	LB LBImplementation
}

// ReachAddr is one address and where it was read.
type ReachAddr struct {
	Addr string
	// Field: "spec.externalIPs[0]", "node node-1 (pod traefik/traefik-x, hostPort)",
	// "status.loadBalancer.ingress[1]".
	Field string
	// Node is the node that carries it, when known.
	Node string
}

// HostPortPod is one pod of a hostPort form.
type HostPortPod struct {
	Pod, Node string
	// NodeAddrs are the node's InternalIPs (ExternalIPs too: portmap matches every local address).
	NodeAddrs []string
	Ready     bool
	// Mapped are the role's ports the pod maps as hostPorts ("53/UDP").
	Mapped []string
	// HostIP is the hostIP of the mapping when one is set: then only that address is DNATed.
	HostIP string
}

// LBImplementation is the load balancer behind a type LoadBalancer Service.
type LBImplementation struct {
	// Name is one of LBServiceLB, LBCiliumNode, LBMetalLB, or what the Service names
	// (its loadBalancerClass), "" when nothing says.
	Name string
	// NodeAddresses: the implementation hands out the nodes' own addresses (ServiceLB,
	// Cilium node IPAM). False for MetalLB and any implementation not recognised.
	NodeAddresses bool
	// Why says how it was recognised, or why it cannot serve this setup.
	Why string
}

// Addrs are the valid addresses of r (unmapped), in order, each once.
func (r Reach) Addrs() []netip.Addr {
	var out []netip.Addr
	for _, a := range r.Addresses {
		if ip, err := netip.ParseAddr(a.Addr); err == nil && !slices.Contains(out, ip.Unmap()) {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// Raw are the addresses as read.
func (r Reach) Raw() []string {
	out := make([]string, 0, len(r.Addresses))
	for _, a := range r.Addresses {
		out = append(out, a.Addr)
	}
	return out
}

// Describe is one line for doctor's discovery block: "hostPort on node-1, node-2: 10.0.10.11,10.0.10.12".
func (r Reach) Describe() string {
	switch r.Form {
	case FormHostPort:
		return fmt.Sprintf("hostPort (%s) on the nodes of %d pod(s): %s", strings.Join(r.Ports, ","), len(r.Pods), strings.Join(r.Raw(), ","))
	case FormLoadBalancer:
		impl := r.LB.Name
		if impl == "" {
			impl = "implementation not recognised"
		}
		return fmt.Sprintf("type LoadBalancer (%s): %s", impl, strings.Join(r.Raw(), ","))
	}
	return "externalIPs " + strings.Join(r.Raw(), ",")
}

// ProxyReachable is where the proxy is reachable: discovery's Reach, else (a Setup built by
// hand) the proxy Service's externalIPs.
// The externalIPs form is read from the Service itself each time (it is the Service's own
// field), the other forms from what discovery modelled.
func (s *Setup) ProxyReachable() Reach { return reachable(s.ProxyService, s.ProxyReach, proxyRole) }

// DNSReachable is where the DNS is reachable (see ProxyReachable).
func (s *Setup) DNSReachable() Reach { return reachable(s.DNSService, s.DNSReach, dnsRole) }

func reachable(svc *corev1.Service, modelled Reach, role serviceRole) Reach {
	switch {
	case svc == nil:
		return modelled
	case len(svc.Spec.ExternalIPs) > 0 || modelled.Form == "" || modelled.Form == FormExternalIPs:
		return externalIPsReach(svc, role)
	}
	return modelled
}

// UsesExternalIPs reports whether either role is reached through spec.externalIPs.
func (s *Setup) UsesExternalIPs() bool {
	return s.ProxyReachable().Form == FormExternalIPs || s.DNSReachable().Form == FormExternalIPs
}

func rolePorts(role serviceRole) []string {
	out := make([]string, 0, len(role.all))
	for _, p := range role.all {
		out = append(out, p.String())
	}
	return out
}

func externalIPsReach(svc *corev1.Service, role serviceRole) Reach {
	r := Reach{Form: FormExternalIPs, Ports: rolePorts(role)}
	for i, ip := range svc.Spec.ExternalIPs {
		r.Addresses = append(r.Addresses, ReachAddr{Addr: ip, Field: fmt.Sprintf("spec.externalIPs[%d]", i)})
	}
	return r
}

// primary is the port whose mapping makes a node an address of the role: 443/TCP for the
// proxy (the HTTPS path), 53/UDP for the DNS (what resolvers ask first).
func (r serviceRole) primary() portProto {
	if r.name == proxyRole.name {
		return portProto{443, corev1.ProtocolTCP}
	}
	return portProto{53, corev1.ProtocolUDP}
}

// hostPorts are the role's ports that p maps as hostPorts, and the hostIP of the mapping.
// A hostPort counts for the port number it exposes on the node (hostPort), whatever the
// container port.
func hostPorts(p *corev1.Pod, role serviceRole) (mapped []string, hostIP string) {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.HostPort == 0 {
				continue
			}
			pp := portProto{cp.HostPort, kubeobj.Protocol(cp.Protocol)}
			if slices.Contains(role.all, pp) && !slices.Contains(mapped, pp.String()) {
				mapped = append(mapped, pp.String())
				if cp.HostIP != "" {
					hostIP = cp.HostIP
				}
			}
		}
	}
	sort.Strings(mapped)
	return mapped, hostIP
}

// mapsRolePorts reports whether one of pods maps one of the role's ports as a hostPort (the
// pods of a hostPort form, even one that left out the primary port: LA102/LA103 then say
// which). hostNetwork pods bind the node's ports themselves: not a mapping.
func mapsRolePorts(pods []corev1.Pod, role serviceRole) bool {
	for i := range pods {
		if pods[i].Spec.HostNetwork {
			continue
		}
		if m, _ := hostPorts(&pods[i], role); len(m) > 0 {
			return true
		}
	}
	return false
}

func nodeByName(nodes []corev1.Node, name string) *corev1.Node {
	for i := range nodes {
		if nodes[i].Name == name {
			return &nodes[i]
		}
	}
	return nil
}

// nodeAddrs are a node's InternalIPs then ExternalIPs, as written.
func nodeAddrs(n *corev1.Node) []string {
	var out []string
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for _, a := range n.Status.Addresses {
			if a.Type == t && !slices.Contains(out, a.Address) {
				out = append(out, a.Address)
			}
		}
	}
	return out
}

// hostPortReach: the pods' nodes. A node is an address of the role when a Ready pod on it
// maps the primary port; its address is the node's InternalIP (or the mapping's hostIP).
// A pod that is not Ready still receives what portmap DNATs (portmap does not look at
// readiness: the rules live as long as the sandbox), so it is listed in Pods for the checks
// to say so, but its node is not counted as serving the role.
func hostPortReach(pods []corev1.Pod, nodes []corev1.Node, role serviceRole) Reach {
	r := Reach{Form: FormHostPort, Ports: rolePorts(role)}
	for i := range pods {
		p := &pods[i]
		if p.Spec.HostNetwork || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		mapped, hostIP := hostPorts(p, role)
		if len(mapped) == 0 {
			continue
		}
		hp := HostPortPod{Pod: p.Namespace + "/" + p.Name, Node: p.Spec.NodeName, Ready: kubeobj.PodReady(p), Mapped: mapped, HostIP: hostIP}
		n := nodeByName(nodes, p.Spec.NodeName)
		if n != nil {
			hp.NodeAddrs = nodeAddrs(n)
		}
		r.Pods = append(r.Pods, hp)
		if !hp.Ready || !slices.Contains(mapped, role.primary().String()) {
			continue
		}
		addrs, field := podNodeAddrs(p, n)
		if hostIP != "" {
			if a, err := netip.ParseAddr(hostIP); err == nil && !a.IsUnspecified() {
				addrs = []netip.Addr{a}
			}
		}
		for _, a := range addrs {
			if slices.ContainsFunc(r.Addresses, func(x ReachAddr) bool { return x.Addr == a.String() }) {
				continue
			}
			r.Addresses = append(r.Addresses, ReachAddr{Addr: a.String(), Node: p.Spec.NodeName,
				Field: fmt.Sprintf("%s %s (pod %s, hostPort %s)", field, p.Spec.NodeName, hp.Pod, role.primary())})
		}
	}
	sort.SliceStable(r.Addresses, func(i, j int) bool { return r.Addresses[i].Node < r.Addresses[j].Node })
	return r
}

// podNodeAddrs are the addresses of the node a pod runs on: the node's InternalIPs when
// discovery read the node; otherwise (its read out of scope or forbidden, the node gone) the
// pod's status.hostIPs, which the kubelet copies from that node's addresses (generateAPIPodStatus
// in pkg/kubelet/kubelet_pods.go, through GetNodeHostIPs in pkg/util/node/node.go: the
// InternalIPs first, then the ExternalIPs, of Kubernetes v1.37.2). field says which.
func podNodeAddrs(p *corev1.Pod, n *corev1.Node) ([]netip.Addr, string) {
	if n != nil {
		return kubeobj.NodeInternalIPs(n), "node"
	}
	var out []netip.Addr
	for _, h := range p.Status.HostIPs {
		if a, err := netip.ParseAddr(h.IP); err == nil && !slices.Contains(out, a.Unmap()) {
			out = append(out, a.Unmap())
		}
	}
	return out, "status.hostIPs of the pod on node"
}

// loadBalancerReach: status.loadBalancer.ingress, and the implementation that wrote it.
func loadBalancerReach(svc *corev1.Service, nodes []corev1.Node, svclb []corev1.Pod, role serviceRole) Reach {
	r := Reach{Form: FormLoadBalancer, Ports: rolePorts(role), LB: recogniseLB(svc, svclb)}
	for i, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP == "" {
			continue
		}
		ra := ReachAddr{Addr: in.IP, Field: fmt.Sprintf("status.loadBalancer.ingress[%d]", i)}
		if a, err := netip.ParseAddr(in.IP); err == nil {
			if ns := nodesWithAddr(nodes, a); len(ns) == 1 {
				ra.Node = ns[0]
			}
		}
		r.Addresses = append(r.Addresses, ra)
	}
	return r
}

func nodesWithAddr(nodes []corev1.Node, a netip.Addr) []string {
	var out []string
	for i := range nodes {
		for _, na := range nodeAddrs(&nodes[i]) {
			if x, err := netip.ParseAddr(na); err == nil && x.Unmap() == a.Unmap() {
				out = append(out, nodes[i].Name)
				break
			}
		}
	}
	return out
}

// recogniseLB names the implementation of a type LoadBalancer Service from what it writes:
//   - Cilium node IPAM serves spec.loadBalancerClass "io.cilium/node" and writes the
//     ExternalIPs of the selected nodes, else their InternalIPs (cilium/cilium
//     operator/pkg/nodeipam/nodesvclb.go isServiceSupported, getNodeLoadBalancerIngresses);
//   - k3s ServiceLB serves the Services without a class, through a DaemonSet svclb-<name>-<uid8>
//     in kube-system whose pods carry svccontroller.k3s.cattle.io/svcname and /svcnamespace and
//     map every Service port as a hostPort; it writes the ExternalIPs of the nodes of its Ready
//     pods, else their InternalIPs (k3s-io/k3s pkg/cloudprovider/servicelb.go newDaemonSet,
//     podIPs; commit 0821db5a);
//   - MetalLB allocates from its IPAddressPools and records the pool in the annotation
//     metallb.io/ip-allocated-from-pool (metallb.universe.tf/ before v0.14; metallb/metallb
//     controller/service.go convergeBalancer). The address is one it announces itself (ARP or
//     BGP) and moves between nodes: it is never a node's own address, and a pool holding node
//     addresses would answer for an address another host already owns.
func recogniseLB(svc *corev1.Service, svclb []corev1.Pod) LBImplementation {
	class := ""
	if svc.Spec.LoadBalancerClass != nil {
		class = *svc.Spec.LoadBalancerClass
	}
	switch {
	case class == ciliumNodeLB:
		return LBImplementation{Name: LBCiliumNode, NodeAddresses: true, Why: `spec.loadBalancerClass "io.cilium/node": Cilium's operator writes the addresses of the selected nodes (their ExternalIPs when any node has one, else their InternalIPs)`}
	case hasMetalLB(svc):
		return LBImplementation{Name: LBMetalLB, Why: "MetalLB assigned the address from an IPAddressPool (annotation " + metallbAnnotation(svc) + "): it announces an address of its own (ARP or BGP) that moves between nodes, never a node's own address, so it cannot keep the nodes' LAN addresses as entry points; a pool holding node addresses would answer for addresses the nodes already own"}
	case class == "" && len(svclb) > 0:
		nodes := map[string]bool{}
		for _, p := range svclb {
			if p.Spec.NodeName != "" {
				nodes[p.Spec.NodeName] = true
			}
		}
		return LBImplementation{Name: LBServiceLB, NodeAddresses: true, Why: fmt.Sprintf("%d svclb pod(s) in %s on %d node(s) (labels %s, %s) map the Service's ports as hostPorts; ServiceLB writes the addresses of the nodes of its Ready pods", len(svclb), svclbRootNS, len(nodes), svclbName, svclbNS)}
	case class != "":
		return LBImplementation{Name: class, Why: fmt.Sprintf("spec.loadBalancerClass %q is an implementation doctor does not model: whether its addresses are the nodes' own is not known", class)}
	}
	return LBImplementation{Why: "no loadBalancerClass, no ServiceLB pods (svclb-* in kube-system) and no MetalLB annotation: the implementation that wrote status.loadBalancer is not known"}
}

func hasMetalLB(svc *corev1.Service) bool { return metallbAnnotation(svc) != "" }

func metallbAnnotation(svc *corev1.Service) string {
	keys := make([]string, 0, len(svc.Annotations))
	for k := range svc.Annotations {
		if strings.HasPrefix(k, metallbPrefix) || strings.HasPrefix(k, metallbOld) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// SvcLBSelector selects k3s ServiceLB's pods for svc.
func SvcLBSelector(svc *corev1.Service) string {
	return svclbName + "=" + svc.Name + "," + svclbNS + "=" + svc.Namespace
}

// reachOf models the form of svc for role: externalIPs first (today's setup), then the pods'
// hostPorts, then type LoadBalancer.
func reachOf(svc *corev1.Service, pods []corev1.Pod, nodes []corev1.Node, svclb []corev1.Pod, role serviceRole) Reach {
	switch {
	case svc == nil:
		return Reach{}
	case len(svc.Spec.ExternalIPs) > 0:
		return externalIPsReach(svc, role)
	case mapsRolePorts(pods, role):
		return hostPortReach(pods, nodes, role)
	case svc.Spec.Type == corev1.ServiceTypeLoadBalancer:
		return loadBalancerReach(svc, nodes, svclb, role)
	}
	return externalIPsReach(svc, role)
}

// deriveReach fills ProxyReach and DNSReach from what discovery read.
func (s *Setup) deriveReach() {
	s.ProxyReach = reachOf(s.ProxyService, s.ProxyPods, s.Nodes, s.LBPods[svcKey(s.ProxyService)], proxyRole)
	s.DNSReach = reachOf(s.DNSService, s.DNSPods, s.Nodes, s.LBPods[svcKey(s.DNSService)], dnsRole)
}

func svcKey(svc *corev1.Service) string {
	if svc == nil {
		return ""
	}
	return svc.Namespace + "/" + svc.Name
}
