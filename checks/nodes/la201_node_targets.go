package nodes

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
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

// listenerNodes returns the nodes whose InternalIP is an externalIP of one of services, in the
// order of the Setup's nodes, and the addresses no node carries (LA101 reports those).
func listenerNodes(nodes []corev1.Node, services ...*corev1.Service) ([]listenerNode, []netip.Addr) {
	byAddr := map[netip.Addr]*corev1.Node{}
	for i := range nodes {
		n := &nodes[i]
		for _, a := range kube.NodeInternalIPs(n) {
			byAddr[a] = n
		}
	}
	var set listenerSet
	var orphans []netip.Addr
	for _, svc := range services {
		if svc == nil {
			continue
		}
		ports := capturedPorts(svc)
		for _, a := range kube.ExternalAddrs(svc) {
			node, ok := byAddr[a]
			if !ok {
				if !slices.Contains(orphans, a) {
					orphans = append(orphans, a)
				}
				continue
			}
			set.node(node).carry(a, ports, svc.Namespace+"/"+svc.Name)
		}
	}
	sort.SliceStable(set.nodes, func(i, j int) bool { return set.nodes[i].Node.Name < set.nodes[j].Node.Name })
	return set.nodes, orphans
}

// listenerSet gathers the listener nodes, each once, in the order they are first met.
type listenerSet struct {
	nodes []listenerNode
	index map[string]int
}

// node is the listener node of n, added when it is new.
func (s *listenerSet) node(n *corev1.Node) *listenerNode {
	if s.index == nil {
		s.index = map[string]int{}
	}
	i, seen := s.index[n.Name]
	if !seen {
		i = len(s.nodes)
		s.index[n.Name] = i
		s.nodes = append(s.nodes, listenerNode{Node: n, Ports: map[servicePortKey][]string{}})
	}
	return &s.nodes[i]
}

// carry records that the node carries address a of service, which captures ports on it.
func (n *listenerNode) carry(a netip.Addr, ports []servicePortKey, service string) {
	if !slices.Contains(n.Addrs, a) {
		n.Addrs = append(n.Addrs, a)
	}
	for _, k := range ports {
		if !slices.Contains(n.Ports[k], service) {
			n.Ports[k] = append(n.Ports[k], service)
		}
	}
}

// capturedPorts are the ports kube-proxy captures for svc on its externalIPs that LA201 can
// see taken: TCP and UDP (SCTP sockets are not in /proc/net/{tcp,udp}).
func capturedPorts(svc *corev1.Service) []servicePortKey {
	out := make([]servicePortKey, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		proto := strings.ToLower(string(kube.Protocol(p.Protocol)))
		port, ok := kube.PortNumber(p.Port)
		if !ok || (proto != "tcp" && proto != "udp") {
			continue
		}
		out = append(out, servicePortKey{Protocol: proto, Port: port})
	}
	return out
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
				k, ok := nodePortOf(p.Spec.HostNetwork, cp)
				if _, ours := n.Ports[k]; !ok || !ours || !n.bindsOurAddress(p.Spec.HostNetwork, cp) {
					continue
				}
				out = append(out, portClaim{Pod: p, Container: c.Name, Key: k, HostIP: cp.HostIP, HostNet: p.Spec.HostNetwork,
					Backend: backends[p.Namespace+"/"+p.Name]})
			}
		}
	}
	return out
}

// nodePortOf is the port of the node a container port takes: its hostPort, else with
// hostNetwork its containerPort; ok is false when it takes none.
func nodePortOf(hostNetwork bool, cp corev1.ContainerPort) (servicePortKey, bool) {
	port := cp.HostPort
	if hostNetwork && port == 0 {
		port = cp.ContainerPort
	}
	n, ok := kube.PortNumber(port)
	return servicePortKey{Protocol: strings.ToLower(string(kube.Protocol(cp.Protocol))), Port: n}, ok
}

// bindsOurAddress says whether a container port takes its port on the node's addresses: a
// hostPort bound to another address of the node (hostIP) does not. With hostNetwork the process
// binds where it likes: hostIP then does not tell, and the claim stands.
func (n listenerNode) bindsOurAddress(hostNetwork bool, cp corev1.ContainerPort) bool {
	if cp.HostIP == "" || hostNetwork {
		return true
	}
	a, err := netip.ParseAddr(cp.HostIP)
	return err != nil || a.IsUnspecified() || n.carries(a)
}
