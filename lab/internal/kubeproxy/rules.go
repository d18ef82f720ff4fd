// Package kubeproxy is the lab's kube-proxy: for every Service it sends the ClusterIP and each
// externalIP, per port, to one ready endpoint with iptables DNAT inside each node namespace
// (PREROUTING for traffic arriving at the node, OUTPUT for the node's own processes), and
// masquerades DNAT'ed traffic that leaves the node so replies come back through it.
package kubeproxy

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Chain names the lab owns in each node's nat table.
const (
	ServicesChain    = "LAB-SERVICES"
	PostroutingChain = "LAB-POSTROUTING"
)

// Endpoint is a ready backend of a Service port.
type Endpoint struct {
	IP   string
	Port int32
	Node string
}

// Rule is one DNAT: frontend address:port/proto to an endpoint.
type Rule struct {
	Service  string // namespace/name
	Frontend string
	Port     int32
	Protocol corev1.Protocol
	Endpoint Endpoint
}

// Rules computes the DNAT rules one node programs. An endpoint on the same node is preferred
// (no extra hop); otherwise the choice is a stable hash of node and Service, so different
// nodes spread over the endpoints while each node's choice does not flap between resyncs.
func Rules(node string, services []*corev1.Service, slices []*discoveryv1.EndpointSlice) []Rule {
	bySvc := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range slices {
		name := s.Labels[discoveryv1.LabelServiceName]
		if name == "" {
			continue
		}
		key := s.Namespace + "/" + name
		bySvc[key] = append(bySvc[key], s)
	}
	var rules []Rule
	for _, svc := range services {
		key := svc.Namespace + "/" + svc.Name
		frontends := ipv4Frontends(svc)
		if len(frontends) == 0 {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if sp.Protocol != corev1.ProtocolTCP && sp.Protocol != corev1.ProtocolUDP && sp.Protocol != "" {
				continue
			}
			proto := sp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			eps := readyEndpoints(bySvc[key], sp.Name, proto)
			if len(eps) == 0 {
				continue
			}
			ep := pick(node, key, eps)
			for _, fe := range frontends {
				rules = append(rules, Rule{Service: key, Frontend: fe, Port: sp.Port, Protocol: proto, Endpoint: ep})
			}
		}
	}
	sort.Slice(rules, func(i, j int) bool {
		a, b := rules[i], rules[j]
		if a.Frontend != b.Frontend {
			return a.Frontend < b.Frontend
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return a.Protocol < b.Protocol
	})
	return rules
}

// ipv4Frontends are the addresses kube-proxy's IPv4 proxier captures for a Service (the lab's
// kube-proxy is iptables, IPv4): none unless the Service has an IPv4 ClusterIP (kubernetes
// v1.37 pkg/proxy/servicechangetracker.go serviceToServiceMap: ShouldSkipService skips
// headless and ExternalName Services, and GetClusterIPByFamily(ipFamily) == "" skips a Service
// of the other family), then that ClusterIP and the IPv4 externalIPs only (pkg/proxy/
// serviceport.go newBaseServiceInfo: "Filter ExternalIPs to correct IP family"). An IPv6
// externalIP of a single-stack IPv4 Service is accepted by the API server and captured by no
// node.
func ipv4Frontends(svc *corev1.Service) []string {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return nil
	}
	clusterIPs := svc.Spec.ClusterIPs
	if len(clusterIPs) == 0 {
		clusterIPs = []string{svc.Spec.ClusterIP}
	}
	var out []string
	for _, ip := range clusterIPs {
		if isIPv4(ip) {
			out = append(out, ip)
			break
		}
	}
	if len(out) == 0 {
		return nil
	}
	for _, ip := range svc.Spec.ExternalIPs {
		if isIPv4(ip) {
			out = append(out, ip)
		}
	}
	return out
}

func isIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Unmap().Is4()
}

func readyEndpoints(slices []*discoveryv1.EndpointSlice, portName string, proto corev1.Protocol) []Endpoint {
	var eps []Endpoint
	for _, s := range slices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		var port *int32
		for _, p := range s.Ports {
			pn := ""
			if p.Name != nil {
				pn = *p.Name
			}
			pp := corev1.ProtocolTCP
			if p.Protocol != nil {
				pp = *p.Protocol
			}
			if pn == portName && pp == proto && p.Port != nil {
				port = p.Port
			}
		}
		if port == nil {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			if len(e.Addresses) == 0 {
				continue
			}
			node := ""
			if e.NodeName != nil {
				node = *e.NodeName
			}
			eps = append(eps, Endpoint{IP: e.Addresses[0], Port: *port, Node: node})
		}
	}
	sort.Slice(eps, func(i, j int) bool { return eps[i].IP < eps[j].IP })
	return eps
}

func pick(node, svc string, eps []Endpoint) Endpoint {
	for _, e := range eps {
		if e.Node == node {
			return e
		}
	}
	h := fnv.New32a()
	_, _ = fmt.Fprintf(h, "%s|%s", node, svc) // a hash.Hash never returns a write error
	return eps[int(h.Sum32())%len(eps)]
}

// RestoreInput renders the rules as iptables-restore input for the nat table. Only the lab's
// chains are declared, so `iptables-restore --noflush` replaces them and leaves the rest.
func RestoreInput(rules []Rule) string {
	var b strings.Builder
	b.WriteString("*nat\n")
	fmt.Fprintf(&b, ":%s - [0:0]\n:%s - [0:0]\n", ServicesChain, PostroutingChain)
	fmt.Fprintf(&b, "-F %s\n-F %s\n", ServicesChain, PostroutingChain)
	for _, r := range rules {
		fmt.Fprintf(&b, "-A %s -d %s/32 -p %s -m %s --dport %d -m comment --comment %q -j DNAT --to-destination %s:%d\n",
			ServicesChain, r.Frontend, strings.ToLower(string(r.Protocol)), strings.ToLower(string(r.Protocol)), r.Port,
			r.Service, r.Endpoint.IP, r.Endpoint.Port)
	}
	fmt.Fprintf(&b, "-A %s -m conntrack --ctstate DNAT -j MASQUERADE\n", PostroutingChain)
	b.WriteString("COMMIT\n")
	return b.String()
}
