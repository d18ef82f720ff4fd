package nodes

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
)

// servicePortKey is a port as kube-proxy captures it on an externalIP: number and transport.
type servicePortKey struct {
	Protocol string // "tcp" or "udp"
	Port     uint16
}

func (k servicePortKey) String() string { return fmt.Sprintf("%d/%s", k.Port, k.Protocol) }

// listenerNode is a node that carries one or more of our addresses, with the Service ports
// captured on each (from the Services' own ports, not a fixed list).
type listenerNode struct {
	Node  *corev1.Node
	Addrs []netip.Addr
	// Ports maps each captured port to the Services exposing it ("traefik/traefik").
	Ports map[servicePortKey][]string
}

func (n listenerNode) object() string {
	as := make([]string, 0, len(n.Addrs))
	for _, a := range n.Addrs {
		as = append(as, a.String())
	}
	return fmt.Sprintf("%s (%s)", n.Node.Name, strings.Join(as, ", "))
}

func (n listenerNode) sortedPorts() []servicePortKey {
	out := make([]servicePortKey, 0, len(n.Ports))
	for k := range n.Ports {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Port != out[j].Port {
			return out[i].Port < out[j].Port
		}
		return out[i].Protocol < out[j].Protocol
	})
	return out
}

func (n listenerNode) carries(a netip.Addr) bool {
	for _, x := range n.Addrs {
		if x == a.Unmap() {
			return true
		}
	}
	return false
}

// listenerNodes returns the nodes that carry an externalIP of one of services, in name order,
// and the addresses no node carries as far as the API and the node reads tell (LA101 reports
// those). A node carries an address its status.addresses list (InternalIP or ExternalIP), or
// one the node reads found on its own stack (owners: a second NIC's address, which
// status.addresses do not list). kube-proxy captures an externalIP on whichever node owns it
// (its rules match the destination address, not an interface), so LA201 reads that node.
func listenerNodes(nodes []corev1.Node, owners map[netip.Addr][]string, services ...*corev1.Service) ([]listenerNode, []netip.Addr) {
	byAddr := map[netip.Addr][]int{}
	byName := map[string]int{}
	for i := range nodes {
		byName[nodes[i].Name] = i
		for _, a := range noderead.NodeStatusAddrs(&nodes[i]) {
			byAddr[a] = append(byAddr[a], i)
		}
	}
	for a, names := range owners {
		for _, name := range names {
			if i, ok := byName[name]; ok && !slices.Contains(byAddr[a.Unmap()], i) {
				byAddr[a.Unmap()] = append(byAddr[a.Unmap()], i)
			}
		}
	}
	b := listenerNodeSet{index: map[string]int{}}
	for _, svc := range services {
		if svc == nil {
			continue
		}
		for _, a := range kubeobj.ExternalAddrs(svc) {
			carriers, ok := byAddr[a]
			if !ok {
				if !slices.Contains(b.orphans, a) {
					b.orphans = append(b.orphans, a)
				}
				continue
			}
			for _, i := range carriers {
				b.add(&nodes[i], a, svc)
			}
		}
	}
	sort.SliceStable(b.out, func(i, j int) bool { return b.out[i].Node.Name < b.out[j].Node.Name })
	return b.out, b.orphans
}

// unlistedAddrs are the externalIPs of services that no node's status.addresses list.
func unlistedAddrs(nodes []corev1.Node, services ...*corev1.Service) []netip.Addr {
	listed := map[netip.Addr]bool{}
	for i := range nodes {
		for _, a := range noderead.NodeStatusAddrs(&nodes[i]) {
			listed[a] = true
		}
	}
	var out []netip.Addr
	for _, svc := range services {
		if svc == nil {
			continue
		}
		for _, a := range kubeobj.ExternalAddrs(svc) {
			if !listed[a] && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// listenerNodeSet gathers listenerNodes, one per node.
type listenerNodeSet struct {
	out     []listenerNode
	index   map[string]int
	orphans []netip.Addr
}

// add records that node carries a, an externalIP of svc, and captures svc's ports there.
func (b *listenerNodeSet) add(node *corev1.Node, a netip.Addr, svc *corev1.Service) {
	j, seen := b.index[node.Name]
	if !seen {
		j = len(b.out)
		b.index[node.Name] = j
		b.out = append(b.out, listenerNode{Node: node, Ports: map[servicePortKey][]string{}})
	}
	n := &b.out[j]
	if !slices.Contains(n.Addrs, a) {
		n.Addrs = append(n.Addrs, a)
	}
	name := svc.Namespace + "/" + svc.Name
	for _, p := range svc.Spec.Ports {
		k, ok := portKey(p.Protocol, p.Port)
		if !ok {
			continue // SCTP sockets are not in /proc/net/{tcp,udp}
		}
		if !slices.Contains(n.Ports[k], name) {
			n.Ports[k] = append(n.Ports[k], name)
		}
	}
}

// portKey is the key of a TCP or UDP port as the API gives it; ok is false for another
// protocol or a number no socket can have.
func portKey(protocol corev1.Protocol, port int32) (servicePortKey, bool) {
	proto := strings.ToLower(string(kubeobj.Protocol(protocol)))
	if (proto != "tcp" && proto != "udp") || port < 1 || port > 65535 {
		return servicePortKey{}, false
	}
	return servicePortKey{Protocol: proto, Port: uint16(port)}, true
}

// portClaim is a pod that, by its spec alone, takes one of our ports on the node: a
// hostNetwork container port, or a hostPort on the wildcard or the node address.
type portClaim struct {
	Pod       *corev1.Pod
	Container string
	Key       servicePortKey
	HostIP    string
	HostNet   bool
	// Backend is true when the pod is one of the Service's own endpoints: a hostNetwork proxy
	// listening on the port it is the Service for is not a conflict.
	Backend bool
}

func (c portClaim) describe() string {
	how := "hostPort"
	if c.HostNet {
		how = "hostNetwork containerPort"
	}
	return fmt.Sprintf("pod %s/%s (container %s) claims %s by %s", c.Pod.Namespace, c.Pod.Name, c.Container, c.Key, how)
}

// podClaims lists what pods on the node claim of the node's ports, by their spec.
func podClaims(n listenerNode, pods []corev1.Pod, backends map[string]bool) []portClaim {
	var out []portClaim
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != n.Node.Name || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				k, ok := claimedPort(n, p, cp)
				if !ok {
					continue
				}
				out = append(out, portClaim{Pod: p, Container: c.Name, Key: k, HostIP: cp.HostIP, HostNet: p.Spec.HostNetwork,
					Backend: backends[p.Namespace+"/"+p.Name]})
			}
		}
	}
	return out
}

// claimedPort is the port of n that container port cp of pod p takes, if it takes one: its
// hostPort, or with hostNetwork its containerPort, on the wildcard or one of n's addresses.
func claimedPort(n listenerNode, p *corev1.Pod, cp corev1.ContainerPort) (servicePortKey, bool) {
	port := cp.HostPort
	if p.Spec.HostNetwork && port == 0 {
		port = cp.ContainerPort
	}
	k, ok := portKey(cp.Protocol, port)
	if !ok {
		return k, false
	}
	if _, ours := n.Ports[k]; !ours {
		return k, false
	}
	if cp.HostIP != "" && !p.Spec.HostNetwork {
		if a, err := netip.ParseAddr(cp.HostIP); err == nil && !a.IsUnspecified() && !n.carries(a) {
			return k, false // bound to another address of the node
		}
	}
	return k, true
}

// reachedServices are the proxy and DNS Services as LA201 judges them: carrying, in place of
// their externalIPs, the addresses where each is reachable in the form in use (issue 26:
// the nodes of hostPort pods, a load balancer's node addresses). Copies: the Setup is shared.
func reachedServices(s *kube.Setup) (proxy, dns *corev1.Service) {
	with := func(svc *corev1.Service, r kube.Reach) *corev1.Service {
		if svc == nil || r.Form == kube.FormExternalIPs || r.Form == "" {
			return svc
		}
		c := svc.DeepCopy()
		c.Spec.ExternalIPs = r.Raw()
		return c
	}
	return with(s.ProxyService, s.ProxyReachable()), with(s.DNSService, s.DNSReachable())
}
