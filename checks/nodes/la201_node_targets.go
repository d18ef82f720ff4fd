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
	byAddr := map[netip.Addr]int{}
	var out []listenerNode
	for i := range nodes {
		n := &nodes[i]
		for _, a := range kube.NodeInternalIPs(n) {
			byAddr[a] = i
		}
	}
	index := map[string]int{}
	var orphans []netip.Addr
	for _, svc := range services {
		if svc == nil {
			continue
		}
		name := svc.Namespace + "/" + svc.Name
		for _, a := range kube.ExternalAddrs(svc) {
			i, ok := byAddr[a]
			if !ok {
				if !slices.Contains(orphans, a) {
					orphans = append(orphans, a)
				}
				continue
			}
			node := &nodes[i]
			j, seen := index[node.Name]
			if !seen {
				j = len(out)
				index[node.Name] = j
				out = append(out, listenerNode{Node: node, Ports: map[servicePortKey][]string{}})
			}
			if !slices.Contains(out[j].Addrs, a) {
				out[j].Addrs = append(out[j].Addrs, a)
			}
			for _, p := range svc.Spec.Ports {
				proto := strings.ToLower(string(kube.Protocol(p.Protocol)))
				if proto != "tcp" && proto != "udp" {
					continue // SCTP sockets are not in /proc/net/{tcp,udp}
				}
				k := servicePortKey{Protocol: proto, Port: uint16(p.Port)}
				if !slices.Contains(out[j].Ports[k], name) {
					out[j].Ports[k] = append(out[j].Ports[k], name)
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Node.Name < out[j].Node.Name })
	return out, orphans
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
				proto := strings.ToLower(string(kube.Protocol(cp.Protocol)))
				port := cp.HostPort
				if p.Spec.HostNetwork && port == 0 {
					port = cp.ContainerPort
				}
				if port == 0 {
					continue
				}
				k := servicePortKey{Protocol: proto, Port: uint16(port)}
				if _, ours := n.Ports[k]; !ours {
					continue
				}
				if cp.HostIP != "" && !p.Spec.HostNetwork {
					if a, err := netip.ParseAddr(cp.HostIP); err == nil && !a.IsUnspecified() && !n.carries(a) {
						continue // bound to another address of the node
					}
				}
				out = append(out, portClaim{Pod: p, Container: c.Name, Key: k, HostIP: cp.HostIP, HostNet: p.Spec.HostNetwork,
					Backend: backends[p.Namespace+"/"+p.Name]})
			}
		}
	}
	return out
}
