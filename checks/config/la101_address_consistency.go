package config

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// AddressConsistency is LA101: the proxy's externalIPs, the DNS Service's externalIPs and the
// zone's answers are one set of addresses per family (A answers with the IPv4 externalIPs,
// AAAA answers with the IPv6 ones: dual stack), each written canonically and each the
// InternalIP of exactly one Ready Linux node. A workstation is handed the zone's answers and
// connects to the proxy there; an address outside any of the three sets, or carried by no
// node, is a connection that goes nowhere. AAAA answers no Service carries send IPv6 clients
// where nothing is captured (FAIL); IPv6 addresses on the Services that the zone answers with
// NODATA are claimed for nothing (WARN).
func AddressConsistency(env *Env) engine.Check {
	return checkCtx(env, "LA101", func(ctx context.Context, s *kube.Setup) engine.Outcome {
		return addressConsistency(s, func(addrs []netip.Addr) *noderead.NodeAddrs { return placeAddrs(ctx, env.Reader, s, addrs) })
	})
}

// addrSource is one of the three lists of addresses.
type addrSource struct {
	Name   string // "proxy", "dns", "zone"
	Title  string // "the proxy Service's externalIPs"
	Object string
	// Fields are where each address is written: "spec.externalIPs[1]", "line 6".
	Fields []string
	Forms  []addrForm
	// Known is false when the list could not be read (the zone of an unparsable Corefile).
	Known bool
	// Namespace and Svc name the Service of a Service's list.
	Namespace, Svc string
	// Form is the address form of a Service's list ("" for the zone).
	Form kube.AddressForm
	// RType is the record type of a zone's list (A or AAAA).
	RType string
	// Unbuildable marks the zone answers CoreDNS cannot build (by index of Forms): they answer
	// nothing, so they are not in the set.
	Unbuildable map[int]bool
}

func (s addrSource) set() []netip.Addr {
	var out []netip.Addr
	for i, f := range s.Forms {
		if f.Addr.IsValid() && !s.Unbuildable[i] && !slices.Contains(out, f.Addr) {
			out = append(out, f.Addr)
		}
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}

// addressConsistency judges s; place tells where addresses no node lists live (nil result:
// the nodes were not read).
func addressConsistency(s *kube.Setup, place func([]netip.Addr) *noderead.NodeAddrs) engine.Outcome {
	proxy := serviceAddrs("proxy", s.ProxyService.Namespace, s.ProxyService.Name, s.ProxyReachable())
	dnsSvc := serviceAddrs("dns", s.DNSService.Namespace, s.DNSService.Name, s.DNSReachable())
	zoneA, zoneAAAA := zoneAddrs(s, "A"), zoneAddrs(s, "AAAA")
	var findings []engine.Finding
	for _, src := range []addrSource{proxy, dnsSvc, zoneA, zoneAAAA} {
		findings = append(findings, formFindings(s, src)...)
	}
	v4 := []addrSource{proxy.family(true), dnsSvc.family(true), zoneA}
	findings = append(findings, setFindings(s, v4)...)
	uncaptured, lost := uncapturedFindings(s, zoneA, zoneAAAA)
	findings = append(findings, uncaptured...)
	if !writtenAsA(zoneA) {
		// IPv6 addresses written as IN A answers: their fix (ZONE-ANSWER-INVALID) moves them
		// into the AAAA template, which settles the IPv6 comparison too.
		findings = append(findings, ipv6Findings(s, proxy.family(false), dnsSvc.family(false), zoneAAAA, lost)...)
	}
	unread := unreadOf(s, "LA101", "")
	if unread == "" {
		findings = append(findings, nodeFindings(s, []addrSource{proxy, dnsSvc, zoneA, zoneAAAA}, place)...)
	}
	if !zoneA.Known {
		why := "the zone's answers are not known (" + s.ZoneAnswers.Why + "; LA104 says more, LA301 asks them live), so only the two Services were compared"
		if unread != "" {
			why = unread + "; " + why
		}
		unread = why
	}
	return engine.Partial("LA101", findings, unread)
}

// writtenAsA reports IPv6 addresses among a zone's A answers.
func writtenAsA(zoneA addrSource) bool {
	for i, f := range zoneA.Forms {
		if zoneA.Unbuildable[i] && f.Addr.IsValid() && f.Addr.Is6() {
			return true
		}
	}
	return false
}

// family keeps the addresses of one family (IPv4 when v4) of a Service's list.
func (s addrSource) family(v4 bool) addrSource {
	out := s
	out.Forms, out.Fields, out.Unbuildable = nil, nil, nil
	for i, f := range s.Forms {
		if f.Addr.IsValid() && f.Addr.Is4() == v4 {
			out.Forms = append(out.Forms, f)
			out.Fields = append(out.Fields, s.Fields[i])
		}
	}
	return out
}

// ipv6Findings compares the IPv6 addresses: with AAAA answers, the three lists must agree like
// the IPv4 ones; AAAA answers that no Service carries are a FAIL (IPv6 clients connect where
// kube-proxy captures nothing); IPv6 addresses on the Services that the zone answers with
// NODATA (the seed's design) break nothing but are claimed for nothing: WARN. Answering AAAA
// is never suggested for addresses kube-proxy does not capture (uncaptured: a single-stack
// Service's, LA101-FAMILY-NOT-CAPTURED).
func ipv6Findings(s *kube.Setup, proxy, dnsSvc, zone addrSource, uncaptured []netip.Addr) []engine.Finding {
	services := len(proxy.set())+len(dnsSvc.set()) > 0
	switch {
	case !zone.Known && !services:
		return nil
	case len(zone.set()) > 0 || !zone.Known:
		return setFindings(s, []addrSource{proxy, dnsSvc, zone})
	case !services:
		return nil
	case !s.ZoneAnswers.AAAA.NoData():
		// AAAA of the zone is forwarded or fails: LA104 says so; the sets cannot be compared.
		return []engine.Finding{{Code: "LA101-IPV6-UNANSWERED", Severity: engine.SeverityWarn, Object: zone.Object,
			Message:  fmt.Sprintf("the Services carry IPv6 addresses (%s) but the zone does not answer AAAA from a template (%s): the IPv6 addresses cannot be compared", addrList(append(proxy.set(), dnsSvc.set()...)), s.ZoneAnswers.AAAA.Describe()),
			Evidence: map[string]any{"proxy": addrStrings(proxy.set()), "dns": addrStrings(dnsSvc.set())}}}
	}
	out := setFindings(s, []addrSource{proxy, dnsSvc})
	ips := append(proxy.set(), dnsSvc.set()...)
	f := engine.Finding{Code: "LA101-IPV6-UNANSWERED", Severity: engine.SeverityWarn, Object: zone.Object,
		Message:  fmt.Sprintf("the Services carry IPv6 addresses (%s), but the zone answers AAAA with NODATA: workstations only ever connect over IPv4, and the IPv6 externalIPs are claimed for nothing", addrList(unique(ips))),
		Evidence: map[string]any{"proxy": addrStrings(proxy.set()), "dns": addrStrings(dnsSvc.set()), "aaaa": "NODATA"}}
	if slices.ContainsFunc(ips, func(a netip.Addr) bool { return slices.Contains(uncaptured, a) }) {
		f.Message += "; kube-proxy does not capture them either (LA101-FAMILY-NOT-CAPTURED): do not answer AAAA with them"
	} else if e, ok := zoneAnswersEdit(s, unique(ips), "AAAA"); ok && s.ZoneAnswers.ByName == nil {
		f.Remediation = "# either answer AAAA with them (or remove them from the Services' externalIPs):\n" + e.Remediation()
	}
	return append(out, f)
}

func unique(addrs []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}

// serviceAddrs is where a role is reachable, read from discovery's Reach of its form: the
// Service's externalIPs, the nodes of its hostPort pods, or its load-balancer addresses.
func serviceAddrs(name, ns, svc string, r kube.Reach) addrSource {
	role := name
	if name == "dns" {
		role = "DNS"
	}
	src := addrSource{Name: name, Title: "the " + role + " Service's externalIPs", Object: kubeobj.Ref("Service", ns, svc), Namespace: ns, Svc: svc, Known: true, Form: r.Form}
	switch r.Form {
	case kube.FormHostPort:
		src.Title = "the addresses of the nodes where the " + role + " pods map their hostPorts"
	case kube.FormLoadBalancer:
		src.Title = "the " + role + " Service's load-balancer addresses"
	}
	for _, a := range r.Addresses {
		src.Fields = append(src.Fields, a.Field)
		src.Forms = append(src.Forms, readAddr(a.Addr))
	}
	return src
}

// formFix is the fix of a role's list in a form other than externalIPs: where the role is
// reachable follows from where its pods run (hostPort) or what the load balancer writes, not
// from a field doctor can patch.
func formFix(src addrSource, ref []netip.Addr) string {
	if src.Form == kube.FormHostPort {
		return remedy.Commentf("# run a Ready pod of %s that maps the role's hostPorts on the node of each of %s (the DaemonSet's nodeSelector, tolerations, affinity), or make the zone answer only where it runs", src.Object, addrList(ref))
	}
	return remedy.Commentf("# the load balancer of %s writes its addresses (status.loadBalancer): select the nodes of %s for it (ServiceLB: label svccontroller.k3s.cattle.io/enablelb; Cilium node IPAM: annotation io.cilium.nodeipam/match-node-labels), or make the zone answer what it writes", src.Object, addrList(ref))
}

// zoneAddrs reads the zone template's A or AAAA answers from discovery's model. The sets
// only hold the answers CoreDNS can build (an IPv6 address written `IN A` is not an A answer).
func zoneAddrs(s *kube.Setup, rtype string) addrSource {
	z := s.ZoneAnswers
	answers := z.Answers
	src := addrSource{Name: "zone", Title: "the zone's A answers", Object: z.Object, Known: z.Known, RType: rtype}
	if rtype == "AAAA" {
		answers, src.Title = z.AAAAAnswers, "the zone's AAAA answers"
	}
	where := "Corefile"
	if z.File != "" {
		where = z.File
	}
	src.Unbuildable = map[int]bool{}
	for i, a := range answers {
		src.Fields = append(src.Fields, fmt.Sprintf("%s line %d", where, a.Line))
		src.Forms = append(src.Forms, answerForm(a, rtype))
		src.Unbuildable[i] = a.Err != ""
	}
	return src
}

// answerForm judges the data of an A or AAAA answer. CoreDNS parses the record at query time:
// a record that does not parse makes every query of that type in the zone fail.
func answerForm(a corefile.Answer, rtype string) addrForm {
	f := readAddr(a.Data)
	if a.Err != "" && f.Problem == "" {
		f.Problem = a.Err
	}
	if a.Err != "" {
		f.Canonical = false
		if f.Addr.IsValid() && f.Addr.Is6() && rtype == "A" {
			f.Problem = "an IPv6 address written as an `IN A` record"
		}
	}
	return f
}

func formFindings(s *kube.Setup, src addrSource) []engine.Finding {
	var out []engine.Finding
	for i, f := range src.Forms {
		if f.Problem == "" {
			continue
		}
		sev, code := engine.SeverityWarn, "LA101-ADDRESS-NOT-CANONICAL"
		msg := fmt.Sprintf("%s %q: %s", src.Fields[i], f.Raw, f.Problem)
		switch {
		case src.Name == "zone" && !f.Canonical:
			// CoreDNS builds the record at query time: one bad answer fails them all.
			sev, code = engine.SeverityFail, "LA101-ZONE-ANSWER-INVALID"
			msg += fmt.Sprintf("; CoreDNS cannot build this %s record, so every %s query of the zone gets SERVFAIL", src.RType, src.RType)
		case !f.Addr.IsValid() || strings.HasPrefix(f.Problem, "not a unicast"):
			sev, code = engine.SeverityFail, "LA101-ADDRESS-INVALID"
		case strings.HasPrefix(f.Problem, "leading zeros"):
			msg += fmt.Sprintf(" (Kubernetes reads %s, but inet_aton-based tools read the octets as octal)", f.Addr)
		}
		out = append(out, engine.Finding{
			Code: code, Severity: sev, Object: src.Object, Message: msg,
			Evidence:    map[string]any{"field": src.Fields[i], "value": f.Raw, "canonical": canonicalOrEmpty(f)},
			Remediation: formRemediation(s, src, i, f),
		})
	}
	return out
}

func canonicalOrEmpty(f addrForm) string {
	if f.Addr.IsValid() {
		return f.Addr.String()
	}
	return ""
}

func formRemediation(s *kube.Setup, src addrSource, i int, f addrForm) string {
	if src.Name == "zone" {
		// An answer CoreDNS cannot build: written anew (an IPv6 address moves into a
		// `template IN AAAA` entry, never back into `IN A`; 010.0.10.12 becomes 10.0.10.12).
		o := s.ZoneAnswers.A
		if src.RType == "AAAA" {
			o = s.ZoneAnswers.AAAA
		}
		if t := answeringTemplate(o); src.Unbuildable[i] && t != nil {
			if e, ok := splitFamilies(s, t); ok {
				return e.Remediation()
			}
		}
		if f.Addr.IsValid() && f.Addr.Is6() && src.RType == "A" {
			return remedy.Comment(fmt.Sprintf("%s: move %s into a `template IN AAAA` entry (the fix cannot be proven before it is written)", src.Fields[i], f.Addr))
		}
		if f.Addr.IsValid() {
			return remedy.Comment(fmt.Sprintf("%s: write it as %s (the fix cannot be proven before it is written)", src.Fields[i], f.Addr))
		}
		return remedy.Comment(src.Fields[i] + ": write a node's InternalIP (kubectl get nodes -o wide; the fix cannot be proven before it is written)")
	}
	if src.Form != kube.FormExternalIPs && src.Form != "" {
		return remedy.Commentf("# %s: %s is read from the cluster (the node or the load balancer), not written by hand", src.Fields[i], f.Raw)
	}
	svc := s.ProxyService
	if src.Name == "dns" {
		svc = s.DNSService
	}
	note := kube.ManagedNote(svc, "Service", "spec.externalIPs")
	path := fmt.Sprintf("/spec/externalIPs/%d", i)
	if !f.Addr.IsValid() {
		return note + remedy.JSONPatch(src.Namespace, "service", src.Svc, remedy.PatchOp{Op: "remove", Path: path})
	}
	return note + remedy.JSONPatch(src.Namespace, "service", src.Svc, remedy.PatchOp{Op: "replace", Path: path, Value: f.Addr.String()})
}

// setFindings compares the three sets: each list that differs from the reference (the set
// two lists agree on, else the proxy's) is a FAIL with the three-way diff as evidence.
func setFindings(s *kube.Setup, sources []addrSource) []engine.Finding {
	known := []addrSource{}
	for _, src := range sources {
		if src.Known {
			known = append(known, src)
		}
	}
	ref := known[0].set()
	for i := range known {
		for j := i + 1; j < len(known); j++ {
			if slices.Equal(known[i].set(), known[j].set()) {
				ref = known[i].set()
			}
		}
	}
	diff := threeWayDiff(known)
	var out []engine.Finding
	for _, src := range known {
		got := src.set()
		if slices.Equal(got, ref) {
			continue
		}
		ev := map[string]any{"reference": addrStrings(ref), "diff": diff}
		for _, k := range known {
			ev[k.Name] = addrStrings(k.set())
		}
		missing, extra := setMinus(ref, got), setMinus(got, ref)
		codes := setCodes[src.Name]
		if len(missing) > 0 {
			out = append(out, engine.Finding{
				Code: codes[0], Severity: engine.SeverityFail, Object: src.Object, Evidence: ev,
				Message:     fmt.Sprintf("%s lack %s, which the others have: workstations are never sent there, or are sent where nothing answers", src.Title, addrList(missing)),
				Remediation: setRemediation(s, src, ref),
			})
		}
		if len(extra) > 0 {
			out = append(out, engine.Finding{
				Code: codes[1], Severity: engine.SeverityFail, Object: src.Object, Evidence: ev,
				Message:     fmt.Sprintf("%s have %s, which the others do not: workstations are sent to addresses where nothing answers, or never to some", src.Title, addrList(extra)),
				Remediation: setRemediation(s, src, ref),
			})
		}
	}
	return out
}

// setCodes are the codes of a list that lacks addresses, and of one that has extra ones.
var setCodes = map[string][2]string{
	"proxy": {"LA101-PROXY-MISSING", "LA101-PROXY-EXTRA"},
	"dns":   {"LA101-DNS-MISSING", "LA101-DNS-EXTRA"},
	"zone":  {"LA101-ZONE-MISSING", "LA101-ZONE-EXTRA"},
}

// threeWayDiff is one line per address: "10.0.10.13: proxy yes, dns no, zone yes".
func threeWayDiff(sources []addrSource) []string {
	var all []netip.Addr
	for _, s := range sources {
		for _, a := range s.set() {
			if !slices.Contains(all, a) {
				all = append(all, a)
			}
		}
	}
	slices.SortFunc(all, func(a, b netip.Addr) int { return a.Compare(b) })
	lines := make([]string, 0, len(all))
	for _, a := range all {
		cols := make([]string, 0, len(sources))
		for _, s := range sources {
			mark := "no"
			if slices.Contains(s.set(), a) {
				mark = "yes"
			}
			cols = append(cols, s.Name+" "+mark)
		}
		lines = append(lines, a.String()+": "+strings.Join(cols, ", "))
	}
	return lines
}

func setRemediation(s *kube.Setup, src addrSource, ref []netip.Addr) string {
	if src.Name == "zone" {
		if s.ZoneAnswers.ByName != nil {
			return byNameRemediation(s, ref, src.RType)
		}
		if e, ok := zoneAnswersEdit(s, ref, src.RType); ok {
			return e.Remediation()
		}
		ns, name := "", ""
		if s.ConfigMap != nil {
			ns, name = s.ConfigMap.Namespace, s.ConfigMap.Name
		}
		return remedy.EditConfigMap(ns, name) + "   # the zone's template must answer exactly (the fix cannot be proven before it is written):\n" + commented(remedy.ZoneTemplate(ref))
	}
	if src.Form != kube.FormExternalIPs && src.Form != "" {
		return formFix(src, ref)
	}
	return serviceAddrsPatch(s, src, ref)
}

// byNameRemediation: the zone is answered name by name (hosts entries, a zone file, a template
// gated by match): the plugin that answers the names asked must answer exactly ref for them.
func byNameRemediation(s *kube.Setup, ref []netip.Addr, rtype string) string {
	z := s.ZoneAnswers
	what := "the plugin that answers them"
	if z.By != nil {
		what = fmt.Sprintf("%s at %s", z.By.Name, z.By.Where())
		if z.By.Name == "file" && len(z.By.Args) > 0 {
			what = fmt.Sprintf("the zone file %s (file at %s; raise its SOA serial with the edit, or CoreDNS keeps the old records)", z.By.Args[0], z.By.Where())
		}
	}
	names := make([]string, 0, len(z.ByName))
	for _, n := range z.ByName {
		names = append(names, strings.TrimSuffix(n, "."))
	}
	if z.By != nil && z.By.Name == "k8s_gateway" {
		// k8s_gateway answers an Ingress host with the Ingress's status.loadBalancer.ingress
		// (ori-edge/k8s_gateway kubernetes.go lookupIngressIndex): the controller that writes
		// that status decides, not the Corefile.
		return remedy.Comment(fmt.Sprintf("a diagnosis: k8s_gateway (%s) answers %s with the IPs of their Ingresses' status.loadBalancer.ingress, which the Ingress controller writes", z.By.Where(), strings.Join(names, ", "))) + "\n" +
			remedy.Comment(fmt.Sprintf("make the controller publish %s there (ingress-nginx: --publish-status-address=%s, or a NodePort Service, whose externalIPs it publishes); the Corefile needs no edit", addrList(ref), strings.Join(addrStrings(ref), ","))) + "\n" +
			remedy.Command("kubectl", "get", "ingress", "-A", "-o", "wide")
	}
	ns, name := "", ""
	if s.ConfigMap != nil {
		ns, name = s.ConfigMap.Namespace, s.ConfigMap.Name
	}
	return remedy.EditConfigMap(ns, name) + "   " + remedy.Comment(fmt.Sprintf("%s must answer %s with exactly %s for %s (the fix cannot be proven before it is written)", what, rtype, addrList(ref), strings.Join(names, ", ")))
}

// nodeFindings checks that every address is the InternalIP of exactly one Ready Linux node or,
// where no node lists it, an address one node's own stack carries (read through place).
func nodeFindings(s *kube.Setup, sources []addrSource, place func([]netip.Addr) *noderead.NodeAddrs) []engine.Finding {
	var all []netip.Addr
	for _, src := range sources {
		for _, a := range src.set() {
			if !slices.Contains(all, a) {
				all = append(all, a)
			}
		}
	}
	slices.SortFunc(all, func(a, b netip.Addr) int { return a.Compare(b) })
	var out []engine.Finding
	all, out = lbAddresses(s, all)
	carried := carriedElsewhere(s, all, place)
	for _, a := range all {
		nodes := kubeobj.NodesWithInternalIP(s.Nodes, a)
		if len(nodes) == 0 && carried[a].finding != nil {
			out = append(out, *carried[a].finding)
			nodes = carried[a].nodes
		}
		fail := func(code, object, msg string, ev map[string]any) {
			ev["address"] = a.String()
			out = append(out, engine.Finding{Code: code, Severity: engine.SeverityFail, Object: object, Message: msg, Evidence: ev,
				Remediation: "kubectl get nodes -o wide   # pick the InternalIPs of Ready Linux nodes\n" + remedy.Commentf("# then remove %s from both Services' externalIPs and from %s", a, zoneAnswerSource(s))})
		}
		switch {
		case len(nodes) == 0:
			fail("LA101-NO-NODE", a.String(), fmt.Sprintf("%s is the InternalIP of no node%s: nothing routes it to a node, so nothing answers there", a, carried[a].searched), map[string]any{"nodes": nodeInternalIPs(s)})
		case len(nodes) > 1:
			var names []string
			for _, n := range nodes {
				names = append(names, n.Name)
			}
			fail("LA101-SEVERAL-NODES", a.String(), fmt.Sprintf("%s is the InternalIP of %d nodes (%s): the LAN cannot route it to one of them reliably", a, len(nodes), strings.Join(names, ", ")), map[string]any{"nodes": names})
		case !kubeobj.NodeReady(nodes[0]):
			fail("LA101-NODE-NOT-READY", fmt.Sprintf("%s (%s)", nodes[0].Name, a), fmt.Sprintf("node %s, which carries %s, is not Ready: connections to this address fail", nodes[0].Name, a), map[string]any{"node": nodes[0].Name})
		case kubeobj.NodeOS(nodes[0]) != "linux":
			os := kubeobj.NodeOS(nodes[0])
			fail("LA101-NODE-NOT-LINUX", fmt.Sprintf("%s (%s)", nodes[0].Name, a), fmt.Sprintf("node %s, which carries %s, runs %q, not Linux: the setup relies on Linux kube-proxy capturing the externalIPs", nodes[0].Name, a, os), map[string]any{"node": nodes[0].Name, "os": os})
		}
	}
	return out
}

func nodeInternalIPs(s *kube.Setup) map[string]string {
	out := map[string]string{}
	for _, n := range s.Nodes {
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" {
				out[n.Name] = a.Address
			}
		}
	}
	return out
}

func setMinus(a, b []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func addrStrings(addrs []netip.Addr) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out
}

func addrList(addrs []netip.Addr) string { return strings.Join(addrStrings(addrs), ", ") }

// serviceAddrsPatch sets a Service's externalIPs to ref, keeping its addresses of the other
// family (an IPv4 fix must not drop the IPv6 ones). A Service rendered by Helm or Argo CD is
// set back by them: the note names the values key when the chart is known.
func serviceAddrsPatch(s *kube.Setup, src addrSource, ref []netip.Addr) string {
	svc := s.ProxyService
	if src.Name == "dns" {
		svc = s.DNSService
	}
	v4 := len(ref) == 0 || ref[0].Is4()
	ips := addrStrings(ref)
	for _, raw := range svc.Spec.ExternalIPs {
		if a, err := netip.ParseAddr(raw); err == nil && a.Unmap().Is4() != v4 && !slices.Contains(ips, a.Unmap().String()) {
			ips = append(ips, a.Unmap().String())
		}
	}
	return kube.ManagedNote(svc, "Service", "spec.externalIPs") +
		remedy.MergePatch(src.Namespace, "service", src.Svc, map[string]any{"spec": map[string]any{"externalIPs": ips}})
}

// lbAddresses takes out of all the addresses a load balancer that does not hand out node
// addresses (MetalLB, or one doctor does not model) wrote in a Service's status: its speaker
// answers for them (MetalLB: ARP or BGP), so "no node carries it" says nothing; what announces
// them is not modelled: WARN, never PASS, never a FAIL doctor cannot prove.
func lbAddresses(s *kube.Setup, all []netip.Addr) ([]netip.Addr, []engine.Finding) {
	var out []engine.Finding
	for _, r := range []kube.Reach{s.ProxyReachable(), s.DNSReachable()} {
		if r.Form != kube.FormLoadBalancer || r.LB.NodeAddresses {
			continue
		}
		for _, a := range r.Addrs() {
			if !slices.Contains(all, a) || len(kubeobj.NodesWithInternalIP(s.Nodes, a)) > 0 {
				continue
			}
			all = slices.DeleteFunc(all, func(x netip.Addr) bool { return x == a })
			name := r.LB.Name
			if name == "" {
				name = "a load balancer doctor does not recognise"
			}
			out = append(out, engine.Finding{Code: "LA101-LB-ADDRESS", Severity: engine.SeverityWarn, Object: a.String(),
				Message:  fmt.Sprintf("%s is an address %s hands out, no node's own: what announces it on the LAN is not modelled, so whether it reaches a node is not known (%s)", a, name, r.LB.Why),
				Evidence: map[string]any{"address": a.String(), "implementation": r.LB.Name}})
		}
	}
	return all, out
}

// zoneAnswerSource says where the zone's answers come from, for a fix that changes them.
func zoneAnswerSource(s *kube.Setup) string {
	if by := s.ZoneAnswers.By; by != nil && by.Name == "k8s_gateway" {
		return "the Ingress status k8s_gateway answers from (the controller's published address)"
	}
	return "the zone's template answers"
}
