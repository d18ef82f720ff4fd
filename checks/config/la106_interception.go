package config

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// What a claim captures, per kube-proxy (kubernetes pkg/proxy/iptables/proxier.go
// syncProxyRules, "Capture externalIPs" and "Capture load-balancer ingress"): a rule in
// KUBE-SERVICES per address, port and protocol, a chain the nat table jumps to from PREROUTING
// and from OUTPUT (iptablesJumpChains). Every node therefore hands the Service's pods the
// connections to that address and port, those arriving from the LAN and those the nodes make
// themselves; without endpoints, KUBE-EXTERNAL-SERVICES (filter INPUT) rejects them instead.
// When the address is a node's, whatever the node itself serves on that port (sshd on 22, the
// API server on 6443, the kubelet on 10250, etcd on 2379) is no longer reachable there.

// claim is one address:port/protocol a Service makes kube-proxy capture.
type claim struct {
	Addr  netip.Addr
	Port  int32
	Proto corev1.Protocol
}

func (c claim) String() string { return fmt.Sprintf("%s:%d/%s", c.Addr, c.Port, c.Proto) }

// serviceClaims lists what svc captures: its externalIPs and load-balancer addresses, on
// each of its ports.
func serviceClaims(svc *corev1.Service) []claim {
	var addrs []netip.Addr
	add := func(raw string) {
		if f := readAddr(raw); f.Addr.IsValid() && !slices.Contains(addrs, f.Addr) {
			addrs = append(addrs, f.Addr)
		}
	}
	for _, ip := range svc.Spec.ExternalIPs {
		add(ip)
	}
	if svc.Spec.LoadBalancerIP != "" {
		add(svc.Spec.LoadBalancerIP)
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			add(in.IP)
		}
	}
	out := make([]claim, 0, len(addrs)*len(svc.Spec.Ports))
	for _, a := range addrs {
		for _, p := range svc.Spec.Ports {
			out = append(out, claim{Addr: a, Port: p.Port, Proto: kubeobj.Protocol(p.Protocol)})
		}
	}
	return out
}

// nodePorts are ports a Kubernetes node serves itself, for the message: a claim on a node
// address takes them from the node.
var nodePorts = map[claimPort]string{
	{22, corev1.ProtocolTCP}:    "SSH",
	{179, corev1.ProtocolTCP}:   "BGP (Calico, MetalLB)",
	{2379, corev1.ProtocolTCP}:  "etcd",
	{2380, corev1.ProtocolTCP}:  "etcd peers",
	{4240, corev1.ProtocolTCP}:  "Cilium health",
	{4789, corev1.ProtocolUDP}:  "VXLAN",
	{6081, corev1.ProtocolUDP}:  "Geneve",
	{6443, corev1.ProtocolTCP}:  "the Kubernetes API server",
	{8472, corev1.ProtocolUDP}:  "flannel VXLAN",
	{9099, corev1.ProtocolTCP}:  "Calico health",
	{10250, corev1.ProtocolTCP}: "the kubelet",
	{10256, corev1.ProtocolTCP}: "kube-proxy health",
	{10257, corev1.ProtocolTCP}: "kube-controller-manager",
	{10259, corev1.ProtocolTCP}: "kube-scheduler",
	{51820, corev1.ProtocolUDP}: "WireGuard",
	{51821, corev1.ProtocolUDP}: "WireGuard",
}

type claimPort struct {
	Port  int32
	Proto corev1.Protocol
}

// nodeAddresses maps each address a node reports to the node's name.
func nodeAddresses(nodes []corev1.Node) map[netip.Addr]string {
	out := map[netip.Addr]string{}
	for i := range nodes {
		for _, na := range nodes[i].Status.Addresses {
			if a, err := netip.ParseAddr(na.Address); err == nil {
				out[a.Unmap()] = nodes[i].Name
			}
		}
	}
	return out
}

// partOfSetup reports whether svc selects the proxy's or the DNS's pods (the Traefik chart's
// traefik-udp for HTTP/3): its claims on our addresses are the setup's own.
func partOfSetup(s *kube.Setup, svc *corev1.Service) bool {
	return s.SelectsProxyPods(svc) || s.SelectsDNSPods(svc)
}

// intercepted is another Service's verdict: what it claims of ours, of the nodes', or of the
// setup's (a companion).
type intercepted struct {
	svc       *corev1.Service
	clash     []claim // our address, port and protocol
	nodePorts []claim // a node address (ours on any other port, or another node's on a port nodes serve)
	companion []claim // the setup's own Service on our addresses
}

func claimStrings(cs []claim) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

// judgeClaims sorts every other Service's claims.
func judgeClaims(s *kube.Setup) []intercepted {
	ours := map[claim]bool{}
	ourAddrs := map[netip.Addr]bool{}
	for _, svc := range []*corev1.Service{s.ProxyService, s.DNSService} {
		for _, c := range serviceClaims(svc) {
			ours[c] = true
			ourAddrs[c.Addr] = true
		}
	}
	nodes := nodeAddresses(s.Nodes)
	var out []intercepted
	for i := range s.Services {
		svc := &s.Services[i]
		if isSameService(svc, s.ProxyService) || isSameService(svc, s.DNSService) {
			continue
		}
		v := intercepted{svc: svc}
		companion := partOfSetup(s, svc)
		for _, c := range serviceClaims(svc) {
			_, wellKnown := nodePorts[claimPort{c.Port, c.Proto}]
			switch {
			case companion && ourAddrs[c.Addr]:
				v.companion = append(v.companion, c)
			case ours[c]:
				v.clash = append(v.clash, c)
			case ourAddrs[c.Addr] || (nodes[c.Addr] != "" && wellKnown):
				v.nodePorts = append(v.nodePorts, c)
			}
		}
		if len(v.clash)+len(v.nodePorts)+len(v.companion) > 0 {
			out = append(out, v)
		}
	}
	return out
}

func interceptionFindings(s *kube.Setup, judged []intercepted) []engine.Finding {
	nodes := nodeAddresses(s.Nodes)
	var out []engine.Finding
	for _, v := range judged {
		obj := kubeobj.ServiceRef(v.svc)
		removal := withdrawClaims(v.svc, append(append([]claim{}, v.clash...), v.nodePorts...))
		if len(v.clash) > 0 {
			out = append(out, engine.Finding{Code: "LA106-INTERCEPTION", Severity: engine.SeverityFail, Object: obj,
				Message:     fmt.Sprintf("claims %s, which %s also exposes: kube-proxy may hand LAN traffic for our addresses to this Service (interception, CVE-2020-8554)", strings.Join(claimStrings(v.clash), ", "), victims(s, v.clash)),
				Evidence:    map[string]any{"claims": claimStrings(v.clash), "externalIPs": v.svc.Spec.ExternalIPs},
				Remediation: removal})
		}
		if len(v.nodePorts) > 0 {
			var what []string
			for _, c := range v.nodePorts {
				what = append(what, describeNodeClaim(c, nodes))
			}
			out = append(out, engine.Finding{Code: "LA106-NODE-PORT-CLAIM", Severity: engine.SeverityFail, Object: obj,
				Message:  fmt.Sprintf("claims %s: kube-proxy sends every connection to that address and port, from the LAN and from the nodes themselves, to this Service (or rejects it when it has no endpoint), so the node's own service there is cut off", strings.Join(what, "; ")),
				Evidence: map[string]any{"claims": claimStrings(v.nodePorts), "externalIPs": v.svc.Spec.ExternalIPs}, Remediation: removal})
		}
		if len(v.companion) > 0 {
			out = append(out, engine.Finding{Code: "LA106-SHARED-ADDRESS", Severity: engine.SeverityInfo, Object: obj,
				Message:  fmt.Sprintf("claims %s for the setup's own pods (it selects the proxy's or the DNS's pods): part of the setup, not an interception", strings.Join(claimStrings(v.companion), ", ")),
				Evidence: map[string]any{"claims": claimStrings(v.companion)}})
		}
	}
	return out
}

// victims names our Services that expose the clashing claims.
func victims(s *kube.Setup, clash []claim) string {
	var names []string
	for _, svc := range []*corev1.Service{s.ProxyService, s.DNSService} {
		for _, c := range serviceClaims(svc) {
			if slices.Contains(clash, c) && !slices.Contains(names, kubeobj.ServiceRef(svc)) {
				names = append(names, kubeobj.ServiceRef(svc))
			}
		}
	}
	sort.Strings(names)
	return strings.Join(names, " and ")
}

// describeNodeClaim is "10.0.10.11:22/TCP (node-1's address; SSH)".
func describeNodeClaim(c claim, nodes map[netip.Addr]string) string {
	var parts []string
	if n := nodes[c.Addr]; n != "" {
		parts = append(parts, n+"'s address")
	}
	if what, ok := nodePorts[claimPort{c.Port, c.Proto}]; ok {
		parts = append(parts, what)
	}
	if len(parts) == 0 {
		return c.String()
	}
	return c.String() + " (" + strings.Join(parts, "; ") + ")"
}

func isSameService(a, b *corev1.Service) bool {
	return b != nil && a.Namespace == b.Namespace && a.Name == b.Name
}

// withdrawClaims takes the offending addresses out of svc: its externalIPs without them (the
// others it keeps). An address it holds as a load balancer's is assigned by the load balancer's
// controller (status.loadBalancer.ingress): that fix is the controller's pool, which doctor
// cannot prove.
func withdrawClaims(svc *corev1.Service, bad []claim) string {
	offending := map[netip.Addr]bool{}
	for _, c := range bad {
		offending[c.Addr] = true
	}
	var keep []string
	removed := false
	for _, ip := range svc.Spec.ExternalIPs {
		if f := readAddr(ip); f.Addr.IsValid() && offending[f.Addr] {
			removed = true
			delete(offending, f.Addr)
			continue
		}
		keep = append(keep, ip)
	}
	var steps []string
	steps = append(steps, remedy.Kubectl(svc.Namespace, "get", "service", svc.Name, "-o", "yaml")+"   # who owns it? then, if it has no business on these addresses:")
	if removed {
		if note := kube.ManagedNote(svc, "Service", "spec.externalIPs"); note != "" {
			steps = append(steps, strings.TrimSuffix(note, "\n"))
		}
		op := remedy.PatchOp{Op: "remove", Path: "/spec/externalIPs"}
		if len(keep) > 0 {
			op = remedy.PatchOp{Op: "replace", Path: "/spec/externalIPs", Value: keep}
		}
		steps = append(steps, remedy.JSONPatch(svc.Namespace, "service", svc.Name, op))
	}
	if len(offending) > 0 {
		addrs := make([]string, 0, len(offending))
		for a := range offending {
			addrs = append(addrs, a.String())
		}
		sort.Strings(addrs)
		steps = append(steps, remedy.Commentf("# %s: a load balancer's address (status.loadBalancer.ingress) that its controller (MetalLB, kube-vip, k3s ServiceLB...) gives it: take the node addresses out of that controller's pool, or make the Service a ClusterIP one (not proven by doctor: the controller decides)", strings.Join(addrs, ", ")))
	}
	return strings.Join(steps, "\n")
}
