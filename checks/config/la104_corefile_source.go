package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// An acl or a view in the zone's blocks decides by the query's source address as CoreDNS sees it
// (coredns/coredns v1.14.7 plugin/acl/acl.go matchWithPolicies: state.IP(), the packet's
// source; plugin/view/view.go Filter, client_ip()). With externalTrafficPolicy Cluster (the default) kube-proxy masquerades every
// packet sent to an externalIP (kubernetes/kubernetes pkg/proxy/iptables/proxier.go
// syncProxyRules, "masquerade traffic for ... external destinations": KUBE-MARK-MASQ, then
// MASQUERADE in KUBE-POSTROUTING), so CoreDNS sees the address of the interface towards the
// chosen replica, never the workstation's:
//   - a replica on another node, over native routing: the receiving node's own address (proven
//     on the lab's real kube-proxy, lab/README.md "Facts proven on it");
//   - a replica on the receiving node: its pod network's address on a bridge CNI (cni0, the
//     first address of the node's pod CIDR) or its overlay address (flannel.1, the pod CIDR's
//     network address); the corpus case acl-lan-subnet-only holds the real CoreDNS's answers
//     from each (testdata/corpus/acl-lan-subnet-only/coredns.yaml).
// With Local, kube-proxy neither masquerades nor leaves the node: CoreDNS sees the client.

// aclSource is one address CoreDNS may see a LAN query from, and why.
type aclSource struct {
	addr netip.Addr
	is   string
}

// maxSourceAddresses bounds the DNS Service addresses whose masquerade sources are asked (each
// gives up to three sources, each one query of the model).
const maxSourceAddresses = 32

// masqueradeSources are the addresses kube-proxy's masquerade gives LAN queries sent to the
// DNS Service's addresses: per node carrying one, its own address and its pod network's.
// complete is false when the Service has more addresses than maxSourceAddresses.
func masqueradeSources(s *kube.Setup) (out []aclSource, complete bool) {
	byAddr := map[netip.Addr][]*corev1.Node{}
	for i := range s.Nodes {
		for _, a := range kubeobj.NodeInternalIPs(&s.Nodes[i]) {
			byAddr[a] = append(byAddr[a], &s.Nodes[i])
		}
	}
	seen := map[netip.Addr]bool{}
	add := func(a netip.Addr, is string) {
		if a.IsValid() && !seen[a] {
			seen[a] = true
			out = append(out, aclSource{a, is})
		}
	}
	ips := s.DNSService.Spec.ExternalIPs
	complete = len(ips) <= maxSourceAddresses
	for _, ip := range ips[:min(len(ips), maxSourceAddresses)] {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			continue
		}
		a = a.Unmap()
		for _, n := range byAddr[a] {
			add(a, n.Name+"'s own address (a replica on another node, native routing)")
			if p, err := netip.ParsePrefix(n.Spec.PodCIDR); err == nil && p.Addr().Is4() == a.Is4() {
				p = p.Masked()
				add(p.Addr(), n.Name+"'s overlay address (a replica on the same node, VXLAN CNI)")
				add(p.Addr().Next(), n.Name+"'s pod bridge address (a replica on the same node, bridge CNI)")
			}
		}
	}
	return out, complete
}

// sourceFindings judges the zone's answer where it depends on the query's source (an acl, a
// view) against the sources kube-proxy gives LAN queries.
func sourceFindings(s *kube.Setup, cf *corefile.Corefile, port string) []engine.Finding {
	name := s.Zone.FQDN()
	if h := dns.Fqdn(strings.ToLower(s.ProbeHost.Name)); s.ProbeHost.Name != "" && s.Zone.Contains(h) {
		name = h
	}
	base := cf.Query(corefile.Question{Name: name, Type: dns.TypeA, Port: port})
	if (base.ACL == nil && base.View == "") || s.DNSService == nil || !base.Known() {
		return nil
	}
	var by []string
	file := ""
	if base.View != "" {
		by = append(by, "the view "+base.View)
		if base.Block != nil {
			file = base.Block.File
		}
	}
	if base.ACL != nil {
		by = append(by, "the acl ("+base.ACL.Plugin.Where()+")")
		file = base.ACL.Plugin.File
	}
	decider := strings.Join(by, " and ")
	obj := findingObject(s, file)
	svc := s.DNSService
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		return []engine.Finding{{Code: "LA104-BY-SOURCE", Severity: engine.SeverityInfo, Object: obj,
			Evidence: map[string]any{"by": decider, "externalTrafficPolicy": "Local"},
			Message:  fmt.Sprintf("%s decides what the zone answers by the workstation's own address: %s has externalTrafficPolicy Local, so kube-proxy does not masquerade LAN queries", decider, kubeobj.ServiceRef(svc))}}
	}
	sources, complete := masqueradeSources(s)
	if len(sources) == 0 {
		why := "no node carries one of " + kubeobj.ServiceRef(svc) + "'s addresses"
		if u := s.UnreadReason(kube.ReadKey("", "nodes", "")); u != "" {
			why = u
		}
		return []engine.Finding{{Code: "LA104-SOURCE-UNKNOWN", Severity: engine.SeverityWarn, Object: obj,
			Evidence: map[string]any{"by": decider, "externalTrafficPolicy": "Cluster"},
			Message:  fmt.Sprintf("%s decides what the zone answers by the query's source, and which address kube-proxy's masquerade gives LAN queries cannot be told: %s", decider, why)}}
	}
	var wrong, right []string
	for _, src := range sources {
		q := cf.Query(corefile.Question{Name: name, Type: dns.TypeA, Port: port, Source: src.addr})
		label := src.addr.String() + " (" + src.is + ")"
		if got := sameAnswer(base, q); got != "" {
			wrong = append(wrong, label+": "+got)
		} else {
			right = append(right, label)
		}
	}
	if len(wrong) == 0 && !complete {
		return []engine.Finding{{Code: "LA104-SOURCE-UNKNOWN", Severity: engine.SeverityWarn, Object: obj,
			Evidence: map[string]any{"by": decider, "externalTrafficPolicy": "Cluster", "answered": right},
			Message:  fmt.Sprintf("%s decides what the zone answers by the query's source; the masquerade addresses of the first %d of %s's %d addresses get the zone's answer, the others were not asked", decider, maxSourceAddresses, kubeobj.ServiceRef(svc), len(svc.Spec.ExternalIPs))}}
	}
	if len(wrong) == 0 {
		return []engine.Finding{{Code: "LA104-BY-SOURCE", Severity: engine.SeverityInfo, Object: obj,
			Evidence: map[string]any{"by": decider, "externalTrafficPolicy": "Cluster", "answered": right},
			Message:  fmt.Sprintf("%s gives the zone's answer to every address kube-proxy's masquerade gives LAN queries (%s has externalTrafficPolicy Cluster): it never sees a workstation's own address, so it cannot tell LAN clients from others", decider, kubeobj.ServiceRef(svc))}}
	}
	open := ""
	if len(right) > 0 {
		// proven on the lab's real kube-proxy: internet queries masqueraded to the receiving
		// node's address pass a LAN-only acl (lab/e2e kubeproxy_test.go)
		open = "; and it answers whoever's query is masqueraded to " + firstOf(right, 2) + ", the internet's too when it reaches the node"
	}
	return []engine.Finding{{Code: "LA104-MASQUERADED-SOURCE", Severity: engine.SeverityFail, Object: obj,
		Evidence: map[string]any{"by": decider, "externalTrafficPolicy": "Cluster", "otherwise": wrong, "answered": right},
		Message: fmt.Sprintf("%s has externalTrafficPolicy Cluster: kube-proxy masquerades every LAN query, so %s judges the address the masquerade gives it (a node's, or its pod network's), never the workstation's: from %s the zone does not answer the node addresses%s",
			kubeobj.ServiceRef(svc), decider, firstOf(wrong, 4), open),
		Remediation: remedy.MergePatch(svc.Namespace, "service", svc.Name, map[string]any{"spec": map[string]any{"externalTrafficPolicy": "Local"}}) +
			"\n# with Local, a node carrying an address and no ready replica drops the queries sent to it (LA103):\n# run a replica on every such node (a DaemonSet, or replicas spread by topology)"}}
}

// sameAnswer says how q's outcome differs from the answer base gives the clients the acl or
// view admits ("" when it is the same answer).
func sameAnswer(base, q corefile.Outcome) string {
	switch {
	case q.Dropped:
		return "dropped"
	case !q.Known():
		return "cannot tell (" + q.Unknown + ")"
	case q.Forwarded:
		return "forwarded (the public answer)"
	case q.Rcode != base.Rcode:
		return dns.RcodeToString[q.Rcode]
	case q.NoData() != base.NoData() || !slices.Equal(q.Addrs(), base.Addrs()):
		return "another answer: " + q.Describe()
	}
	return ""
}

// firstOf joins the first n items, and says how many more there are.
func firstOf(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
